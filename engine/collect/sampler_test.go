package collect

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/benchflow/benchflow/engine/results"
	"github.com/benchflow/benchflow/providers"
	"golang.org/x/sys/unix"
)

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startNginx runs Debian's nginx with one worker on a free loopback port
// and stops it (and checks nothing is left) at the end of the test.
func startNginx(t *testing.T) (addr, dir string, master int) {
	t.Helper()
	bin := "/usr/sbin/nginx"
	if _, err := os.Stat(bin); err != nil {
		t.Skip("needs Debian's nginx (/usr/sbin/nginx)")
	}
	dir = t.TempDir()
	port := freePort(t)
	conf := fmt.Sprintf(`worker_processes 1;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log;
events { worker_connections 256; }
http {
    access_log off;
    client_body_temp_path %[1]s/body;
    proxy_temp_path %[1]s/proxy;
    fastcgi_temp_path %[1]s/fastcgi;
    uwsgi_temp_path %[1]s/uwsgi;
    scgi_temp_path %[1]s/scgi;
    server {
        listen 127.0.0.1:%[2]d;
        location / { return 200 "hello from nginx\n"; }
    }
}
`, dir, port)
	if err := os.WriteFile(filepath.Join(dir, "nginx.conf"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-p", dir, "-c", filepath.Join(dir, "nginx.conf"), "-g", "daemon off;")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		// SIGTERM: the master stops its workers; then make sure the
		// whole process group is gone.
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		if pids := pidsWithArg(dir); len(pids) > 0 {
			t.Errorf("nginx processes left behind: %v", pids)
		}
	})
	addr = fmt.Sprintf("127.0.0.1:%d", port)
	for i := 0; ; i++ {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			break
		}
		select {
		case err := <-exited:
			t.Fatalf("nginx exited: %v\n%s", err, out.String())
		case <-time.After(20 * time.Millisecond):
		}
		if i > 500 {
			t.Fatalf("nginx does not listen on %s:\n%s", addr, out.String())
		}
	}
	return addr, dir, cmd.Process.Pid
}

// children lists the pids whose parent is ppid.
func children(ppid int) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		i := strings.LastIndexByte(string(b), ')')
		f := strings.Fields(string(b[i+1:]))
		var pid, pp int
		fmt.Sscan(e.Name(), &pid)
		if len(f) > 1 {
			fmt.Sscan(f[1], &pp)
		}
		if pp == ppid {
			out = append(out, pid)
		}
	}
	return out
}

// pidsWithArg lists processes whose command line contains s.
func pidsWithArg(s string) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		var pid int
		if _, err := fmt.Sscan(e.Name(), &pid); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(b), s) {
			out = append(out, pid)
		}
	}
	return out
}

func startSleep(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	if len(args) == 0 {
		args = []string{"sleep", "30"}
	}
	cmd := exec.Command(args[0], args[1:]...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd
}

// load sends at most n keep-alive requests from two goroutines, for at most
// d, and returns how many succeeded.
func load(t *testing.T, url string, n int64, d time.Duration) int64 {
	t.Helper()
	tr := &http.Transport{MaxIdleConnsPerHost: 2}
	defer tr.CloseIdleConnections()
	cl := &http.Client{Transport: tr, Timeout: 2 * time.Second}
	var sent, ok atomic.Int64
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for sent.Add(1) <= n && time.Now().Before(deadline) {
				resp, err := cl.Get(url)
				if err != nil {
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == 200 {
					ok.Add(1)
				}
			}
		})
	}
	wg.Wait()
	return ok.Load()
}

// TestNginxUnderLoad samples a real nginx, the load generator (this test
// process) and an idle process during a bounded load, writes the rows with
// the results writer and reads them back from processes.parquet.
func TestNginxUnderLoad(t *testing.T) {
	addr, dir, master := startNginx(t)
	// The master listens before it forks its worker: wait for the worker.
	var workers []int
	for range 500 {
		if workers = children(master); len(workers) > 0 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if len(workers) != 1 {
		t.Fatalf("nginx master %d has workers %v, want one", master, workers)
	}
	ours := map[int]bool{master: true, workers[0]: true}
	idle := startSleep(t)
	s, err := Start(context.Background(), Config{
		Step:     "cpu",
		Interval: 250 * time.Millisecond,
		Names:    []string{"nginx"},
		Loader:   true,
		System:   true,
		Network:  true,
		Procs: func(context.Context) []providers.Process {
			return []providers.Process{{PID: idle.Process.Pid, Name: "idle-sleep", Role: "service"}}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	okReqs := load(t, "http://"+addr+"/", 20000, 3*time.Second)
	ps, ss, ns := s.Stop()
	if okReqs == 0 {
		t.Fatal("no request succeeded")
	}

	cpu := map[string]float64{}
	maxCPU := map[string]float64{}
	roles := map[string]string{}
	pids := map[string]map[int]bool{}
	for _, p := range ps {
		if p.Process == "nginx" && !ours[p.PID] {
			continue // another nginx on the machine
		}
		cpu[p.Process] += p.CPUPct
		maxCPU[p.Process] = max(maxCPU[p.Process], p.CPUPct)
		roles[p.Process] = p.Role
		if pids[p.Process] == nil {
			pids[p.Process] = map[int]bool{}
		}
		pids[p.Process][p.PID] = true
		if p.Step != "cpu" || p.T <= 0 || p.CPUPct < 0 || p.RSSBytes <= 0 || p.Threads < 1 || p.CtxSwitchesVoluntary < 0 {
			t.Errorf("implausible row %+v", p)
		}
		if d := p.CPUPct - p.UserPct - p.SystemPct; d > 1e-9 || d < -1e-9 {
			t.Errorf("cpu != user+system in %+v", p)
		}
	}
	loaderName := LoaderName // never the test binary's own name
	if cpu["nginx"] <= 0 {
		t.Errorf("nginx CPU is 0 over %d rows", len(ps))
	}
	if len(pids["nginx"]) != 2 {
		t.Errorf("nginx pids = %v, want master and one worker", pids["nginx"])
	}
	if roles["nginx"] != RoleNamed || roles[loaderName] != RoleLoader || roles["idle-sleep"] != "service" {
		t.Errorf("roles = %v", roles)
	}
	if cpu[loaderName] <= 0 {
		t.Errorf("loader (%s) CPU is 0", loaderName)
	}
	if maxCPU["idle-sleep"] >= 5 {
		t.Errorf("idle process reads %.1f%% CPU", maxCPU["idle-sleep"])
	}
	if _, ok := cpu["idle-sleep"]; !ok {
		t.Error("no rows for the idle process")
	}

	if len(ss) < 2 {
		t.Errorf("%d system rows", len(ss))
	}
	for _, x := range ss {
		sum := x.UserPct + x.NicePct + x.SystemPct + x.IdlePct + x.IOWaitPct + x.IRQPct + x.SoftIRQPct + x.StealPct
		if sum < 99.9 || sum > 100.1 {
			t.Errorf("system split sums to %.2f: %+v", sum, x)
		}
	}
	var loRx int64
	for _, n := range ns {
		if n.Interface == "lo" {
			loRx += n.RxBytes
		}
	}
	// Each response alone is more than 100 bytes of headers and body.
	if loRx < okReqs*100 {
		t.Errorf("lo received %d bytes for %d requests", loRx, okReqs)
	}

	sum := Summary(ps)
	line := FormatSummary(sum)
	t.Logf("%d requests; %s", okReqs, line)
	if !strings.Contains(line, "nginx ") || !strings.Contains(line, loaderName+" ") {
		t.Errorf("summary line %q", line)
	}

	// Through the results writer into processes.parquet and back.
	out := filepath.Join(dir, "results")
	runID := results.NewRunID(time.Now())
	w, err := results.Create(out, &results.Manifest{RunID: runID, Trials: []results.TrialEntry{{TrialID: "t1"}}}, []byte("pipeline {}"), "p.hcl")
	if err != nil {
		t.Fatal(err)
	}
	if err := w.CommitTrial(&results.TrialRecord{TrialID: "t1", Status: results.StatusOK, Processes: ps, System: ss, Network: ns}); err != nil {
		t.Fatal(err)
	}
	if err := w.Finish(results.StatusOK, time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(out, runID, "processes.parquet")); err != nil {
		t.Fatal(err)
	}
	run, err := results.ReadRun(filepath.Join(out, runID))
	if err != nil {
		t.Fatal(err)
	}
	fromFile := map[string]float64{}
	for _, r := range run.Processes {
		if r.Process == "nginx" && !ours[int(r.PID)] {
			continue
		}
		fromFile[r.Process] += r.CPUPct
	}
	if fromFile["nginx"] <= 0 || fromFile[loaderName] <= 0 || len(run.Processes) != len(ps) {
		t.Errorf("processes.parquet: %d rows, cpu by process %v", len(run.Processes), fromFile)
	}
}

// waitRows waits until pred holds on the rows taken so far.
func waitRows(t *testing.T, s *Sampler, pred func([]results.ProcessSample) bool) {
	t.Helper()
	for range 3000 {
		s.mu.Lock()
		ok := pred(s.ps)
		s.mu.Unlock()
		if ok {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("condition on samples never became true")
}

func rowsOf(ps []results.ProcessSample, pid int) []results.ProcessSample {
	var out []results.ProcessSample
	for _, p := range ps {
		if p.PID == pid {
			out = append(out, p)
		}
	}
	return out
}

// TestProcessesComeAndGo: a process that exits stops producing rows and
// leaves no state; one that appears later starts with a baseline.
func TestProcessesComeAndGo(t *testing.T) {
	busy := startSleep(t, "sh", "-c", "while :; do :; done")
	var mu sync.Mutex
	list := []providers.Process{{PID: busy.Process.Pid, Name: "busy"}}
	s, err := Start(context.Background(), Config{
		Step:     "c",
		Interval: 20 * time.Millisecond,
		Procs: func(context.Context) []providers.Process {
			mu.Lock()
			defer mu.Unlock()
			return append([]providers.Process(nil), list...)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	waitRows(t, s, func(ps []results.ProcessSample) bool {
		var c float64
		for _, p := range rowsOf(ps, busy.Process.Pid) {
			c += p.CPUPct
		}
		return c > 0
	})
	busy.Process.Kill()
	busy.Wait()
	late := startSleep(t)
	mu.Lock()
	list = append(list, providers.Process{PID: late.Process.Pid, Name: "late", Role: "infra"})
	mu.Unlock()
	s.mu.Lock()
	nBusy := len(rowsOf(s.ps, busy.Process.Pid))
	s.mu.Unlock()
	waitRows(t, s, func(ps []results.ProcessSample) bool { return len(rowsOf(ps, late.Process.Pid)) >= 2 })
	ps, _, _ := s.Stop()
	if got := len(rowsOf(ps, busy.Process.Pid)); got != nBusy {
		t.Errorf("rows for the exited process grew from %d to %d", nBusy, got)
	}
	if _, ok := s.procs[busy.Process.Pid]; ok {
		t.Error("state of the exited process kept")
	}
	for _, p := range rowsOf(ps, late.Process.Pid) {
		if p.Process != "late" || p.Role != "infra" {
			t.Errorf("row %+v", p)
		}
	}
	for _, p := range rowsOf(ps, busy.Process.Pid) {
		if p.Role != RoleService {
			t.Errorf("empty role not defaulted to service: %+v", p)
		}
	}
	// Stop is idempotent.
	ps2, _, _ := s.Stop()
	if len(ps2) != len(ps) {
		t.Error("second Stop returned other rows")
	}
}

// TestNamePatterns matches by argv[0] base name and by /regex/.
func TestNamePatterns(t *testing.T) {
	dir := t.TempDir()
	link := filepath.Join(dir, "my-long-service-name")
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip(err)
	}
	if err := os.Symlink(sleep, link); err != nil {
		t.Fatal(err)
	}
	// comm is "my-long-service" (15 bytes); argv[0] keeps the full name.
	a := startSleep(t, link, "31")
	b := startSleep(t, "sleep", "32.5")
	s, err := Start(context.Background(), Config{Interval: 20 * time.Millisecond, Names: []string{"my-long-service-name", `/^sleep 32\.5$/`}})
	if err != nil {
		t.Fatal(err)
	}
	waitRows(t, s, func(ps []results.ProcessSample) bool {
		return len(rowsOf(ps, a.Process.Pid)) > 0 && len(rowsOf(ps, b.Process.Pid)) > 0
	})
	ps, _, _ := s.Stop()
	if r := rowsOf(ps, a.Process.Pid); r[0].Process != "my-long-service-name" || r[0].Role != RoleNamed {
		t.Errorf("argv[0] match row %+v", r[0])
	}
	if r := rowsOf(ps, b.Process.Pid); r[0].Process != "sleep" {
		t.Errorf("pattern match row %+v", r[0])
	}
	for _, p := range ps {
		if p.PID != a.Process.Pid && p.PID != b.Process.Pid {
			t.Errorf("unexpected process %+v", p)
		}
	}
}

func TestStartErrors(t *testing.T) {
	if _, err := Start(context.Background(), Config{Step: "c", Interval: time.Millisecond}); err == nil || !strings.Contains(err.Error(), `starting collect "c": interval 1ms is below the minimum 10ms`) {
		t.Errorf("err = %v", err)
	}
	if _, err := Start(context.Background(), Config{Step: "c", Names: []string{"/(/"}}); err == nil || !strings.Contains(err.Error(), "compiling process pattern") {
		t.Errorf("err = %v", err)
	}
}

// TestContextEnds: sampling stops with the context; Stop still returns and
// its last sample still asks the provider with a live context (a
// canceled one would make a container provider report nothing).
func TestContextEnds(t *testing.T) {
	self := os.Getpid()
	var mu sync.Mutex
	var lastErr error
	calls := 0
	ctx, cancel := context.WithCancel(context.Background())
	s, err := Start(ctx, Config{Interval: 10 * time.Millisecond, System: true,
		Procs: func(ctx context.Context) []providers.Process {
			mu.Lock()
			defer mu.Unlock()
			calls++
			lastErr = ctx.Err()
			return []providers.Process{{PID: self, Name: "me"}}
		}})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	<-s.done
	mu.Lock()
	before := calls
	mu.Unlock()
	time.Sleep(20 * time.Millisecond) // more than half an interval: Stop samples once more
	ps, _, _ := s.Stop()
	mu.Lock()
	defer mu.Unlock()
	if calls != before+1 || lastErr != nil {
		t.Errorf("last sample: %d calls after %d, ctx err %v", calls, before, lastErr)
	}
	if len(ps) == 0 || ps[len(ps)-1].Process != "me" {
		t.Errorf("no row from the last sample: %+v", ps)
	}
}

// BenchmarkSampleTick measures one sampling pass over 20 processes given
// by the provider, the loader, a /proc scan for two names, /proc/stat and
// /proc/net/dev. At a 1 s interval the sampler's CPU cost is one tick per
// second: the "%core@1s" metric.
func BenchmarkSampleTick(b *testing.B) {
	var procs []providers.Process
	for range 20 {
		cmd := exec.Command("sleep", "120")
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		procs = append(procs, providers.Process{PID: cmd.Process.Pid, Name: "sleep", Role: "service"})
	}
	s, err := Start(context.Background(), Config{
		Interval: time.Hour, // the benchmark drives the ticks
		Names:    []string{"nginx", "docker-proxy"},
		Procs:    func(context.Context) []providers.Process { return procs },
		Loader:   true,
		System:   true,
		Network:  true,
	})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Stop()
	benchTicks(b, s)
}

// BenchmarkMachineTick measures one pass of the whole-machine accounting
// at the 1 s default: every process of the machine (200 idle sleeps are
// started so there are a few hundred), the tick of BenchmarkSampleTick
// and the loader's threads. "%core@1s" is the sampler's own CPU at a 1 s
// interval; "procs" is how many processes each pass read.
func BenchmarkMachineTick(b *testing.B) {
	for range 200 {
		cmd := exec.Command("sleep", "300")
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	}
	s, err := Start(context.Background(), Config{
		Interval: time.Hour, // the benchmark drives the ticks
		Names:    []string{"nginx", "docker-proxy"},
		Loader:   true,
		System:   true,
		Network:  true,
		Machine:  true,
	})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Stop()
	benchTicks(b, s)
	b.ReportMetric(float64(len(s.m.procs)), "procs")
}

// benchTicks drives the sampler's passes and reports the CPU of one pass
// ("cpu-ns/tick") and, at a 1 s interval, the sampler's share of a core
// ("%core@1s").
func benchTicks(b *testing.B, s *Sampler) {
	var ru0, ru1 unix.Rusage
	unix.Getrusage(unix.RUSAGE_SELF, &ru0)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		s.sample(context.Background(), time.Now())
		s.ps, s.ss, s.ns = s.ps[:0], s.ss[:0], s.ns[:0]
	}
	b.StopTimer()
	unix.Getrusage(unix.RUSAGE_SELF, &ru1)
	cpuNs := float64((ru1.Utime.Nano() + ru1.Stime.Nano()) - (ru0.Utime.Nano() + ru0.Stime.Nano()))
	perTick := cpuNs / float64(b.N)
	b.ReportMetric(perTick, "cpu-ns/tick")
	b.ReportMetric(perTick/1e9*100, "%core@1s")
}
