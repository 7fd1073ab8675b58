package ssh

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benchflow/benchflow/providers"
	"github.com/benchflow/benchflow/providers/ssh/sshtest"
)

// cpuTicks is a process's user+system CPU time from /proc/PID/stat, in
// clock ticks (USER_HZ, 100 a second on Linux).
func cpuTicks(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	// The fields after the command (which may hold spaces), from state:
	// utime and stime are fields 14 and 15 of the line, 12 and 13 here.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return u + s
}

// TestHelperCPUDuringLoad reads the remote helper's own CPU time from
// /proc (the host shares this machine's kernel) across a load on a
// service it started: 4 keep-alive clients for 3 s, at most 200,000
// requests, with the engine's liveness check every 100 ms. It reports
// the figure and asserts nothing about it (the machine's speed is not
// what a test checks): the helper should spend nearly nothing, as it
// only answers pings and waits for its child.
//
//	go test ./providers/ssh -run TestHelperCPUDuringLoad -count=1 -v
func TestHelperCPUDuringLoad(t *testing.T) {
	h := sshtest.Start(t, 1)[0]
	p := provider(t, h, nil)
	dir := p.ServiceDir("web")
	req := spec(t, "web", []string{"/usr/sbin/nginx", "-c", dir + "/nginx.conf", "-e", dir + "/error.log"},
		map[string]string{"nginx.conf": nginxConf(dir, h.Addr, 8080)}, 8080)
	ctx := context.Background()
	dep, err := p.Provision(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		dep.Teardown(context.Background())
		h.WaitEmpty(t)
	}()
	url := dep.Endpoint().URL() + "/"
	for i := 0; ; i++ { // up
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			break
		}
		if i > 200 {
			t.Fatalf("GET %s: %v", url, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	helper := dep.(*Deployment).c.hello.PID
	if cl, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", helper)); !strings.Contains(string(cl), HelperCommand) {
		t.Fatalf("pid %d is not the helper: %q", helper, cl)
	}
	c0, w0 := cpuTicks(t, helper), time.Now()
	var n, budget atomic.Int64
	budget.Store(200_000)
	stop := time.Now().Add(3 * time.Second)
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &http.Client{Timeout: 5 * time.Second}
			for time.Now().Before(stop) && budget.Add(-1) >= 0 {
				resp, err := c.Get(url)
				if err != nil {
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				n.Add(1)
			}
		}()
	}
	for time.Now().Before(stop) {
		if err := dep.(providers.Liveness).Alive(ctx); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	wg.Wait()
	ticks, wall := cpuTicks(t, helper)-c0, time.Since(w0)
	t.Logf("remote helper (pid %d): %d ms of CPU in %s of load (%d requests): %.2f%% of a core (/proc/%d/stat, 10 ms resolution)",
		helper, ticks*10, wall.Round(time.Millisecond), n.Load(), float64(ticks)*10/float64(wall.Milliseconds())*100, helper)
	if n.Load() == 0 {
		t.Fatal("no request answered during the load")
	}
}
