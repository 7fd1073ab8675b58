package k8s

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/klog/v2"
)

// chattyForward is a forward that, like client-go's port-forwarder when the
// load closes a connection, reports an error through the klog logger of its
// context (runtime.HandleErrorWithLogger).
type chattyForward struct{ fakeForward }

func (c *chattyForward) open(ctx context.Context, ns, pod string, specs []string) (forwarder, error) {
	f, err := c.fakeForward.open(ctx, ns, pod, specs)
	runtime.HandleErrorWithLogger(klog.FromContext(ctx), errors.New("read tcp4 127.0.0.1:46455->127.0.0.1:33854: read: connection reset by peer"),
		"Error copying from local connection to remote stream", "localPort", 46455, "remotePort", 80)
	return f, err
}

// TestPortForwardErrorsGoToTheTrialLog: what client-go's port-forwarder
// reports does not reach stderr (the console, mid-load); it is written to
// the service's port-forward log in the trial's log folder, and Teardown
// logs a summary.
func TestPortForwardErrorsGoToTheTrialLog(t *testing.T) {
	s := newSim(t, podsReady)
	p, _ := testProvider(t, s.cs, Config{})
	cf := &chattyForward{}
	p.forward = cf.open
	req := nginxRequest(t)
	req.LogDir = t.TempDir()
	var mu sync.Mutex
	var logged []string
	req.Logf = func(f string, a ...any) {
		mu.Lock()
		defer mu.Unlock()
		logged = append(logged, fmt.Sprintf(f, a...))
	}

	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := os.Stderr
	os.Stderr = w
	d, err := p.Provision(context.Background(), req)
	if err == nil {
		err = d.Teardown(context.Background())
	}
	os.Stderr = stderr
	w.Close()
	console, _ := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(console), "connection reset") {
		t.Errorf("the port-forward error reached stderr:\n%s", console)
	}
	b, err := os.ReadFile(filepath.Join(req.LogDir, "nginx.port-forward.log"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "Error copying from local connection to remote stream") || !strings.Contains(string(b), "connection reset by peer") {
		t.Errorf("port-forward log:\n%s", b)
	}
	all := strings.Join(logged, "\n")
	if !strings.Contains(all, "the port-forward reported 1 message(s)") || !strings.Contains(all, "nginx.port-forward.log") {
		t.Errorf("no summary in the provider's log:\n%s", all)
	}
}
