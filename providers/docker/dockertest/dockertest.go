// Package dockertest helps tests that need a real Docker engine: it connects
// (or skips the test with the reason), builds the local images with
// ../images/build.sh, and checks that nothing labelled by benchflow is left
// behind.
//
// Entry points: Client, Images, NoLeftovers, FreePort.
package dockertest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"

	"github.com/benchflow/benchflow/providers"
)

// The images build.sh produces.
const (
	Nginx = "benchflow/nginx:local"
	Httpd = "benchflow/httpd:local"
	Serve = "benchflow/serve:local"
)

// Client returns a client for the engine the environment names, or skips
// the test when none answers.
func Client(t testing.TB) *client.Client {
	t.Helper()
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		t.Skipf("skipping: no Docker client: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := cli.Ping(ctx); err != nil {
		cli.Close()
		t.Skipf("skipping: no Docker engine reachable at %s: %v", cli.DaemonHost(), err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

var (
	buildMu   sync.Mutex
	buildDone = map[string]error{}
)

// Images makes sure the named images ("nginx", "httpd", "serve") exist,
// running images/build.sh once per test binary; it skips the test when no
// engine is reachable and fails it when the build fails.
func Images(t testing.TB, names ...string) {
	t.Helper()
	Client(t)
	if _, err := exec.LookPath("docker"); err != nil {
		t.Skipf("skipping: images/build.sh needs the docker CLI: %v", err)
	}
	buildMu.Lock()
	defer buildMu.Unlock()
	for _, n := range names {
		err, done := buildDone[n]
		if !done {
			err = runBuild(n)
			buildDone[n] = err
		}
		if err != nil {
			t.Fatalf("building image %s: %v", n, err)
		}
	}
}

// BuildScript is the path of images/build.sh in this source tree.
func BuildScript() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "images", "build.sh")
}

func runBuild(name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, BuildScript(), name).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w\n%s", BuildScript(), name, err, out)
	}
	return nil
}

// Leftovers lists the containers, networks and volumes labelled
// dev.benchflow.managed=true (and dev.benchflow.run=runID when runID is not
// empty).
func Leftovers(ctx context.Context, cli *client.Client, runID string) ([]string, error) {
	f := filters.NewArgs(filters.Arg("label", providers.LabelManaged+"=true"))
	if runID != "" {
		f.Add("label", providers.LabelRun+"="+runID)
	}
	var out []string
	cs, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	if err != nil {
		return nil, err
	}
	for _, c := range cs {
		out = append(out, "container "+strings.Join(c.Names, ",")+" ("+c.State+")")
	}
	ns, err := cli.NetworkList(ctx, network.ListOptions{Filters: f})
	if err != nil {
		return nil, err
	}
	for _, n := range ns {
		out = append(out, "network "+n.Name)
	}
	vs, err := cli.VolumeList(ctx, volume.ListOptions{Filters: f})
	if err != nil {
		return nil, err
	}
	for _, v := range vs.Volumes {
		out = append(out, "volume "+v.Name)
	}
	return out, nil
}

// NoLeftovers fails t when Leftovers finds anything.
func NoLeftovers(t testing.TB, cli *client.Client, runID string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	left, err := Leftovers(ctx, cli, runID)
	if err != nil {
		t.Fatalf("listing leftovers: %v", err)
	}
	if len(left) > 0 {
		t.Errorf("left behind by run %q: %s", runID, strings.Join(left, "; "))
	}
}

// RunID returns a run id unique to this test process and name.
func RunID(t testing.TB) string {
	return fmt.Sprintf("test-%d-%d", os.Getpid(), time.Now().UnixNano()%1e9)
}

// FreePort returns a loopback TCP port that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
