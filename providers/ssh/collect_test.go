package ssh

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/benchflow/benchflow/engine/collect"
	"github.com/benchflow/benchflow/providers"
	"github.com/benchflow/benchflow/providers/ssh/sshtest"
)

// TestCollectOnHost samples a host while a CPU-bound service runs there:
// the helper's sampler reports the service's processes with the host's
// address as their host, the host's /proc/stat, and a CPU budget whose
// service part is the spinning shell; while it samples, the control
// channel carries no more than the keepalive (TestControlTraffic's
// bound): the rows travel once, at the end.
func TestCollectOnHost(t *testing.T) {
	// Small pages: the rows come back in several answers, and whole.
	defer func(n int) { pageRows = n }(pageRows)
	pageRows = 7
	h := sshtest.Start(t, 1)[0]
	p := provider(t, h, nil)
	req := spec(t, "spin", []string{"/bin/sh", "-c", "while :; do :; done"}, nil, 0)
	dep, err := p.Provision(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	defer dep.Teardown(context.Background())
	d := dep.(*Deployment)
	if got := d.SampledHosts(); len(got) != 1 || got[0] != h.Addr {
		t.Fatalf("SampledHosts %v, want [%s]", got, h.Addr)
	}
	cfg := collect.Config{Step: "cpu", Interval: 200 * time.Millisecond, System: true, Network: true, Machine: true, Quiet: 200 * time.Millisecond}
	foreign := []providers.Process{{PID: os.Getpid(), Name: collect.LoaderName, Role: collect.RoleLoader, Host: "controller"}}
	run, err := d.SampleHost(context.Background(), h.Addr, cfg, req.RunID, foreign)
	if err != nil {
		t.Fatal(err)
	}
	c := d.c
	start, b0 := time.Now(), c.bytes.Bytes()
	time.Sleep(3 * time.Second)
	el, n := time.Since(start), c.bytes.Bytes()-b0
	pings := int64(el/pingEvery) + 2
	t.Logf("%d bytes in %s while sampling (%.0f B/s), at most %d pings", n, el.Round(time.Millisecond), float64(n)/el.Seconds(), pings)
	if limit := pings * 512; n > limit {
		t.Errorf("the control channel carried %d bytes in %s while the host was sampled, more than %d pings of 512 bytes", n, el, pings)
	}
	b1 := c.bytes.Bytes()
	res, err := run.Stop(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the samples: %d bytes", c.bytes.Bytes()-b1)
	if res.Host != h.Addr || res.Cores <= 0 {
		t.Errorf("result of host %q with %d cores", res.Host, res.Cores)
	}
	if len(res.Processes) <= pageRows || len(res.System) <= pageRows {
		t.Errorf("%d process and %d system rows: the test wants more than a page (%d) of each", len(res.Processes), len(res.System), pageRows)
	}
	seen := map[[2]float64]bool{}
	for _, r := range res.Processes {
		k := [2]float64{r.T, float64(r.PID)}
		if seen[k] {
			t.Errorf("row of pid %d at %.1f s twice: pages overlap", r.PID, r.T)
		}
		seen[k] = true
	}
	if !res.SharesKernel {
		t.Error("an sshtest host shares this kernel, and the result says it does not")
	}
	var spin, mine int
	for _, r := range res.Processes {
		if r.Host != h.Addr {
			t.Errorf("process row of host %q, want %q: %+v", r.Host, h.Addr, r)
		}
		if r.PID == d.pid && r.Role == collect.RoleService {
			spin++
		}
		if r.PID == os.Getpid() {
			mine++ // the controller's: the host leaves its rows to this machine
		}
		if r.Process == collect.LoaderName || r.Process == collect.HelperName && r.Role != collect.RoleInfra {
			t.Errorf("the helper sampled as %s with role %s: it is the host's infrastructure, not the loader", r.Process, r.Role)
		}
	}
	if spin == 0 {
		t.Errorf("no service row of the spinning shell (pid %d) among %d rows", d.pid, len(res.Processes))
	}
	if mine != 0 {
		t.Errorf("%d rows of the controller (another host's process) in the host's rows", mine)
	}
	if len(res.System) == 0 {
		t.Error("no system rows")
	}
	for _, s := range res.System {
		if s.Host != h.Addr {
			t.Errorf("system row of host %q, want %q", s.Host, h.Addr)
		}
	}
	ex := res.Explanation
	if ex == nil || ex.Budget == nil || ex.Quiet == nil {
		t.Fatalf("no budget or quiet check: %+v", ex)
	}
	if ex.Budget.ServicePct <= 0 {
		t.Errorf("budget %+v: the spinning service has no CPU", *ex.Budget)
	}
	dep.Teardown(context.Background())
	h.WaitEmpty(t)
}
