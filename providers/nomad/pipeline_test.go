package nomad_test

import (
	"context"
	"encoding/json"
	"maps"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/benchflow/benchflow/engine/hclconf"
	"github.com/benchflow/benchflow/engine/plan"
	"github.com/benchflow/benchflow/engine/results"
	"github.com/benchflow/benchflow/engine/run"
	"github.com/benchflow/benchflow/providers/nomad/fake"

	_ "github.com/benchflow/benchflow/providers/nomad"
)

const gatewayPipeline = "../../pipelines/gateway.hcl"

func buildGatewayPlan(t *testing.T, in plan.Inputs) *plan.Plan {
	t.Helper()
	p, diags := hclconf.ParseFile(gatewayPipeline)
	if diags.HasErrors() {
		t.Fatalf("parsing: %v", diags)
	}
	pl, diags := plan.Build(p, in)
	if diags.HasErrors() {
		t.Fatalf("planning: %v", diags)
	}
	return pl
}

// TestGatewayPipelinePlans checks the shipped pipeline: path × count ×
// repetitions trials.
func TestGatewayPipelinePlans(t *testing.T) {
	pl := buildGatewayPlan(t, plan.Inputs{})
	// Five repetitions by default: the claims need at least three.
	if len(pl.Trials) != 2*3*5 {
		t.Errorf("%d trials, want 30", len(pl.Trials))
	}
	var axes []string
	for _, a := range pl.Axes {
		axes = append(axes, a.Name)
	}
	if strings.Join(axes, ",") != "path,count" {
		t.Errorf("axes %v", axes)
	}
	// The direct path alone needs no APISIX.
	pl = buildGatewayPlan(t, plan.Inputs{Vars: map[string]string{"paths": `["direct"]`}})
	if len(pl.Trials) != 3*5 {
		t.Errorf("paths=[direct]: %d trials, want 15", len(pl.Trials))
	}
	for _, tr := range pl.Trials {
		if p := tr.ParamString(); !strings.Contains(p, "path=direct") {
			t.Errorf("paths=[direct]: trial %s has %s", tr.ID, p)
		}
	}
}

// TestGatewayPipelineRefusesExec: the exec driver cannot run
// benchflow.bin (it is outside the task's chroot), so the pipeline refuses
// it when it is validated, with the variable's located error.
func TestGatewayPipelineRefusesExec(t *testing.T) {
	p, diags := hclconf.ParseFile(gatewayPipeline)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	_, diags = plan.Build(p, plan.Inputs{Vars: map[string]string{"driver": "exec"}})
	if !diags.HasErrors() || !strings.Contains(diags.Error(), "chroot does not contain benchflow.bin") || diags[0].Subject == nil {
		t.Errorf("diags = %v, want a located error about the chroot", diags)
	}
}

// TestGatewayPipelineOnFakes runs pipelines/gateway.hcl with the real
// executor and load generator against the fakes, with short loads: every
// trial completes, loads through the gateway succeed, nothing is left
// registered and the admin key is nowhere in the results.
func TestGatewayPipelineOnFakes(t *testing.T) {
	const key = "pipeline-test-admin-key-4f1d0c"
	st := fake.NewStack(key)
	defer st.Close()
	// APISIX's worker caches lag as they do for real.
	st.APISIX.RouteCacheLag = 200 * time.Millisecond
	st.APISIX.DiscoveryLag = 500 * time.Millisecond
	t.Setenv("NOMAD_ADDR", st.Nomad.URL())
	t.Setenv("CONSUL_HTTP_ADDR", st.Consul.URL())
	t.Setenv("APISIX_ADMIN", st.APISIX.AdminURL())
	t.Setenv("APISIX_GATEWAY", st.APISIX.GatewayURL())
	t.Setenv("APISIX_CONTROL", st.APISIX.ControlURL())
	t.Setenv("APISIX_ADMIN_KEY", key)
	t.Setenv("APISIX_ETCD", st.Etcd.URL())
	for _, v := range []string{"NOMAD_TOKEN", "CONSUL_HTTP_TOKEN", "NOMAD_NAMESPACE", "NOMAD_REGION"} {
		t.Setenv(v, "")
	}

	pl := buildGatewayPlan(t, plan.Inputs{
		Vars:        map[string]string{"duration": "300ms", "warm": "100ms", "connections": "4"},
		Repetitions: 1,
	})
	out := t.TempDir()
	sum, err := run.Apply(context.Background(), pl, run.Options{OutDir: out, NoGC: true, Version: "test"})
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if sum.OK != 6 || sum.Failed != 0 {
		t.Fatalf("summary %+v", sum)
	}
	if left := st.Empty(); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
	r, err := results.ReadRun(sum.Dir)
	if err != nil {
		t.Fatal(err)
	}
	loads := 0
	var gatewayRequests int64
	for _, row := range r.Trials {
		if row.Step != "main" || row.Discarded { // a busy attempt re-run (busy_rerun)
			continue
		}
		loads++
		if row.Param("path") == "gateway" {
			gatewayRequests += row.Requests
		}
		if row.Requests == 0 || row.Errors != 0 {
			t.Errorf("trial %s (%v): %d requests, %d errors", row.TrialID, row.Params, row.Requests, row.Errors)
		}
	}
	if loads != 6 {
		t.Errorf("%d load rows, want 6", loads)
	}
	// Gateway loads went through the proxy: it forwarded at least the
	// measured requests (plus warm-up and checks).
	if p := st.APISIX.Proxied(); gatewayRequests == 0 || p < uint64(gatewayRequests) {
		t.Errorf("gateway forwarded %d requests, gateway loads measured %d", p, gatewayRequests)
	}
	// Each trial's manifest entry holds the versions of the stack it
	// used, as the fakes report them: APISIX and its etcd for the
	// gateway path only.
	stack := map[string]string{"nomad_server": "1.6.5", "nomad_client": "1.6.5", "consul": "1.16.4"}
	gateway := map[string]string{"apisix": "3.9.1", "etcd": "3.4.23", "etcd_cluster": "3.4.0"}
	maps.Copy(gateway, stack)
	checkManifestVersions(t, sum.Dir, map[string]map[string]string{"direct": stack, "gateway": gateway})
	err = filepath.Walk(sum.Dir, func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err == nil && strings.Contains(string(b), key) {
			t.Errorf("%s contains the APISIX admin key", path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestGatewayPipelineWithoutConsul runs pipelines/gateway.hcl with
// service_provider=nomad against a Nomad fake without Consul: every trial
// completes through the real executor, the gateway's upstream lists the
// instances Nomad registered, nothing is left and the Consul address
// (CONSUL_HTTP_ADDR) is never dialled.
func TestGatewayPipelineWithoutConsul(t *testing.T) {
	const key = "pipeline-test-admin-key-9a7e21"
	st := fake.NewStackWithoutConsul(key)
	defer st.Close()
	st.APISIX.RouteCacheLag = 200 * time.Millisecond
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var dials atomic.Int64
	accepted := make(chan struct{})
	go func() {
		defer close(accepted)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			dials.Add(1)
			c.Close()
		}
	}()
	t.Setenv("NOMAD_ADDR", st.Nomad.URL())
	t.Setenv("CONSUL_HTTP_ADDR", ln.Addr().String())
	t.Setenv("APISIX_ADMIN", st.APISIX.AdminURL())
	t.Setenv("APISIX_GATEWAY", st.APISIX.GatewayURL())
	t.Setenv("APISIX_CONTROL", "")
	t.Setenv("APISIX_ETCD", "")
	t.Setenv("APISIX_ADMIN_KEY", key)
	for _, v := range []string{"NOMAD_TOKEN", "CONSUL_HTTP_TOKEN", "NOMAD_NAMESPACE", "NOMAD_REGION"} {
		t.Setenv(v, "")
	}
	pl := buildGatewayPlan(t, plan.Inputs{
		Vars:        map[string]string{"duration": "300ms", "warm": "100ms", "connections": "4", "service_provider": "nomad"},
		Repetitions: 1,
	})
	sum, err := run.Apply(context.Background(), pl, run.Options{OutDir: t.TempDir(), NoGC: true, Version: "test"})
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if sum.OK != 6 || sum.Failed != 0 {
		t.Fatalf("summary %+v", sum)
	}
	if left := st.Empty(); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
	r, err := results.ReadRun(sum.Dir)
	if err != nil {
		t.Fatal(err)
	}
	var gatewayRequests int64
	for _, row := range r.Trials {
		if row.Step != "main" {
			continue
		}
		if row.Requests == 0 || row.Errors != 0 {
			t.Errorf("trial %s (%v): %d requests, %d errors", row.TrialID, row.Params, row.Requests, row.Errors)
		}
		if row.Param("path") == "gateway" {
			gatewayRequests += row.Requests
		}
	}
	if p := st.APISIX.Proxied(); gatewayRequests == 0 || p < uint64(gatewayRequests) {
		t.Errorf("gateway forwarded %d requests, gateway loads measured %d", p, gatewayRequests)
	}
	stack := map[string]string{"nomad_server": "1.6.5", "nomad_client": "1.6.5"}
	gateway := map[string]string{"apisix": "3.9.1"}
	maps.Copy(gateway, stack)
	checkManifestVersions(t, sum.Dir, map[string]map[string]string{"direct": stack, "gateway": gateway})
	ln.Close()
	<-accepted
	if n := dials.Load(); n > 0 {
		t.Errorf("CONSUL_HTTP_ADDR was dialled %d times with service_provider=nomad", n)
	}
}

// checkManifestVersions reads dir/manifest.json and checks that every
// trial's service "web" recorded the versions want lists for its path.
func checkManifestVersions(t *testing.T, dir string, want map[string]map[string]string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Trials []struct {
			TrialID  string         `json:"trial_id"`
			Params   map[string]any `json:"params"`
			Services []struct {
				Name     string            `json:"name"`
				Versions map[string]string `json:"versions"`
			} `json:"services"`
		} `json:"trials"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if len(m.Trials) == 0 {
		t.Fatal("manifest lists no trials")
	}
	for _, tr := range m.Trials {
		path, _ := tr.Params["path"].(string)
		if len(tr.Services) != 1 || tr.Services[0].Name != "web" {
			t.Errorf("trial %s: services %+v, want web only", tr.TrialID, tr.Services)
			continue
		}
		if d := cmp.Diff(want[path], tr.Services[0].Versions); d != "" {
			t.Errorf("trial %s (path %s): versions (-want +manifest):\n%s", tr.TrialID, path, d)
		}
	}
}
