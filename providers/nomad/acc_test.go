package nomad_test

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benchflow/benchflow/engine/results"
	"github.com/benchflow/benchflow/providers"
	"github.com/benchflow/benchflow/providers/nomad"
)

// accEnv skips unless acceptance tests are enabled against a real
// Nomad + Consul + APISIX stack.
func accEnv(t *testing.T) {
	t.Helper()
	if os.Getenv("BENCHFLOW_ACC") != "1" {
		t.Skip("acceptance test: set BENCHFLOW_ACC=1 with NOMAD_ADDR, CONSUL_HTTP_ADDR, APISIX_ADMIN (and APISIX_GATEWAY, APISIX_ADMIN_KEY) pointing at a real stack")
	}
	for _, v := range []string{"NOMAD_ADDR", "CONSUL_HTTP_ADDR", "APISIX_ADMIN"} {
		if os.Getenv(v) == "" {
			t.Skipf("acceptance test: %s is not set", v)
		}
	}
	if os.Getenv("APISIX_GATEWAY") == "" {
		t.Setenv("APISIX_GATEWAY", "http://127.0.0.1:9080")
	}
}

// benchflowBin is the binary `make testacc` built, or one built now.
func benchflowBin(t *testing.T) string {
	t.Helper()
	if b := os.Getenv("BENCHFLOW_BIN"); b != "" {
		return b
	}
	bin := filepath.Join(t.TempDir(), "benchflow")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/benchflow/benchflow/cmd/benchflow")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building benchflow: %v\n%s", err, out)
	}
	return bin
}

// TestAccGateway runs pipelines/gateway.hcl with short loads against the
// real stack, then checks every trial completed and nothing is left.
func TestAccGateway(t *testing.T) {
	accEnv(t)
	bin := benchflowBin(t)
	out := t.TempDir()
	cmd := exec.Command(bin, "apply", gatewayPipeline, "--out", out, "--repetitions", "1",
		"--var", "duration=3s", "--var", "warm=1s", "--var", "connections=8", "--verbose")
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	err := cmd.Run()
	if strings.Contains(buf.String(), `provider type "nomad"`) || strings.Contains(buf.String(), "Unknown provider type") {
		t.Fatalf("%s does not include the nomad provider (providers/standard must import it):\n%s", bin, buf.String())
	}
	if key := os.Getenv("APISIX_ADMIN_KEY"); key != "" && strings.Contains(buf.String(), key) {
		t.Error("apply output contains the APISIX admin key")
	}
	if err != nil {
		t.Fatalf("apply: %v\n%s", err, buf.String())
	}
	r, err := results.ReadRun(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range r.Trials {
		if row.Step == "main" && (row.Requests == 0 || row.Status != "ok") {
			t.Errorf("trial %s %v: %d requests, status %s", row.TrialID, row.Params, row.Requests, row.Status)
		}
	}
	removed, err := nomad.GC(context.Background(), &providers.GCRequest{RunID: r.Manifest.RunID})
	if err != nil || len(removed) > 0 {
		t.Errorf("after the run GC removed %v (%v); want nothing left", removed, err)
	}
}

// TestAccProvision provisions the built-in server with raw_exec behind the
// gateway and sends requests both ways.
func TestAccProvision(t *testing.T) {
	accEnv(t)
	bin := benchflowBin(t)
	p, err := nomad.New(&providers.NewRequest{Name: "acc", Config: &nomad.Config{
		Driver: "raw_exec", Count: 2, Gateway: true, ReadyTimeout: "3m"}})
	if err != nil {
		t.Fatal(err)
	}
	req := &providers.ProvisionRequest{RunID: "acc" + time.Now().UTC().Format("20060102T150405Z"), TrialID: "t1",
		Service: providers.ServiceSpec{
			Name:    "web",
			Command: []string{bin, "serve", "--addr", "0.0.0.0:31999"},
			Ports:   []providers.Port{{Name: "http", Host: 31999}},
			Health:  providers.Health{HTTPPath: "/", Interval: time.Second},
		}, Logf: t.Logf}
	dep, err := p.Provision(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := dep.Teardown(context.Background()); err != nil {
			t.Error(err)
		}
	}()
	ep := dep.Endpoint()
	for _, u := range []string{ep.URL() + "/", ep.Attrs["gateway_url"] + "/"} {
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("GET %s: %d", u, resp.StatusCode)
		}
	}
}
