package script_test

import (
	"context"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/benchflow/benchflow/engine/load"
	"github.com/benchflow/benchflow/engine/serve"
	"github.com/benchflow/benchflow/engine/starconf/script"
)

// startServe runs benchflow's built-in server on a loopback port until the
// benchmark ends.
func startServe(b *testing.B) string {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve.Serve(ctx, ln, serve.Config{Size: 64}) }()
	b.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			b.Error(err)
		}
	})
	return "http://" + ln.Addr().String()
}

const rotateScript = `
pool_size = 1000
def request(i):
    return "/item/%d" % i
`

// cpuTime is the CPU time (user + system) this process used so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// runLoad runs one bounded load and returns its rate and the CPU time
// this process spent per request (generator, plus the server when it runs
// in process).
func runLoad(b *testing.B, opts load.Options) (rps float64, cpuPerReq time.Duration) {
	b.Helper()
	opts.Connections, opts.Threads, opts.Duration = 16, 2, time.Second
	opts.Requests = 2_000_000 // a bound in case the machine is very fast
	before := cpuTime(b)
	res, err := load.Run(context.Background(), opts)
	if err != nil {
		b.Fatal(err)
	}
	if res.Errors > 0 {
		b.Fatalf("%d errors", res.Errors)
	}
	return res.RPS(), (cpuTime(b) - before) / time.Duration(max(res.Requests, 1))
}

// BenchmarkScriptRotate1000 compares a load whose request script rotates
// over 1,000 paths with the same load without a script, against the
// built-in server on loopback (or the server at BENCH_TARGET, e.g. a local
// nginx, so that only the generator runs in this process). The loads
// alternate (plain, script, …) to cancel machine drift; the benchmark
// reports both rates, their ratio (target: ratio >= 0.90) and the CPU
// time per request of this process in both modes. Each iteration is 10
// one-second loads.
func BenchmarkScriptRotate1000(b *testing.B) {
	benchAgainstPlain(b, rotateScript, false)
}

const hookScript = `
pool_size = 1000
seen = {}
def request(i):
    return "/item/%d" % i
def response(status, headers, body):
    seen[status] = seen.get(status, 0) + 1
`

// BenchmarkScriptResponseHook is BenchmarkScriptRotate1000 with a
// response() hook counting statuses, run for every response.
func BenchmarkScriptResponseHook(b *testing.B) {
	benchAgainstPlain(b, hookScript, true)
}

func benchAgainstPlain(b *testing.B, src string, hook bool) {
	base := os.Getenv("BENCH_TARGET")
	if base == "" {
		base = startServe(b)
	}
	base = strings.TrimSuffix(base, "/")
	s, err := script.LoadSource(context.Background(), "bench.star", []byte(src), base, script.Options{})
	if err != nil {
		b.Fatal(err)
	}
	scripted := load.Options{Requester: s}
	if hook {
		scripted.OnResponse = s.ResponseHook()
	}
	const rounds = 5
	var plainRPS, scriptRPS float64
	var plainCPU, scriptCPU time.Duration
	for i := 0; i < b.N; i++ {
		for r := 0; r < rounds; r++ {
			rps, cpu := runLoad(b, load.Options{Targets: []load.Target{{URL: base + "/item/0"}}})
			plainRPS, plainCPU = plainRPS+rps, plainCPU+cpu
			rps, cpu = runLoad(b, scripted)
			scriptRPS, scriptCPU = scriptRPS+rps, scriptCPU+cpu
		}
	}
	if err := s.Err(); err != nil {
		b.Fatal(err)
	}
	n := float64(rounds * b.N)
	b.ReportMetric(plainRPS/n, "plain-req/s")
	b.ReportMetric(scriptRPS/n, "script-req/s")
	b.ReportMetric(scriptRPS/plainRPS, "ratio")
	b.ReportMetric(float64(plainCPU.Nanoseconds())/n, "plain-cpu-ns/req")
	b.ReportMetric(float64(scriptCPU.Nanoseconds())/n, "script-cpu-ns/req")
}

// BenchmarkPool measures building the pool of 1,000 prebuilt requests
// (the only work a script adds before the load).
func BenchmarkPool(b *testing.B) {
	s, err := script.LoadSource(context.Background(), "rotate.star", []byte(rotateScript), "http://127.0.0.1:8080", script.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := s.Pool(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkResponseHook measures one response() call (lock, header dict,
// interpreter call) for a hook that counts statuses.
func BenchmarkResponseHook(b *testing.B) {
	s, err := script.LoadSource(context.Background(), "hook.star", []byte(`
seen = {}
def request():
    return "/"
def response(status, headers, body):
    seen[status] = seen.get(status, 0) + 1
`), "http://127.0.0.1:8080", script.Options{})
	if err != nil {
		b.Fatal(err)
	}
	hdrs := [][2]string{{"Content-Type", "text/plain"}, {"Content-Length", "64"}}
	body := make([]byte, 64)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if err := s.Response(200, hdrs, body); err != nil {
			b.Fatal(err)
		}
	}
}
