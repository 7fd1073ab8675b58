package main

import (
	"database/sql"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// stallServer answers on loopback, and once its count of requests reaches
// stallAt it stops answering for pause: every request arriving meanwhile
// waits until the pause ends. The stall is triggered by the request count,
// not by a clock, so it happens in every run whatever the machine's speed.
func stallServer(t *testing.T, stallAt int64, pause time.Duration) string {
	t.Helper()
	var mu sync.Mutex
	var n int64
	var until time.Time
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n++
		if n == stallAt {
			until = time.Now().Add(pause)
		}
		wait := time.Until(until)
		mu.Unlock()
		if wait > 0 {
			time.Sleep(wait)
		}
		w.Write([]byte("ok"))
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String() + "/"
}

// TestStallFlaggedUnsteady: a server that stops answering for a second in
// the middle of a load (at request 1,000 of 4,000, sent at 2,000 req/s)
// makes the trial unsteady in trials.parquet, and the
// report flags it (and keeps it, unless told to exclude it).
func TestStallFlaggedUnsteady(t *testing.T) {
	dir := t.TempDir()
	pipe := filepath.Join(dir, "stall.hcl")
	os.WriteFile(pipe, []byte(`pipeline "stall" {
  repetitions = 1
}
variable "url" {}
step "load" "main" {
  target      = var.url
  connections = 4
  threads     = 1
  rate        = 2000
  requests    = 4000
  duration    = "20s"
  interval    = "100ms"
}
`), 0o644)
	url := stallServer(t, 1000, time.Second)
	out := filepath.Join(dir, "results")
	if b, err := exec.Command(bin, "apply", pipe, "--var", "url="+url, "--out", out).CombinedOutput(); err != nil {
		t.Fatalf("apply: %v\n%s", err, b)
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var steady bool
	var reason string
	q := fmt.Sprintf(`SELECT steady, steady_reason FROM read_parquet('%s') WHERE step = 'main'`, filepath.Join(out, "latest", "trials.parquet"))
	if err := db.QueryRow(q).Scan(&steady, &reason); err != nil {
		t.Fatal(err)
	}
	t.Logf("steady=%v reason=%q", steady, reason)
	if steady || !strings.HasPrefix(reason, "stall: ") {
		t.Fatalf("a 1 s stall mid-load: steady=%v reason=%q, want unsteady with a stall", steady, reason)
	}
	rep, err := exec.Command(bin, "report", filepath.Join(out, "latest")).CombinedOutput()
	if err != nil || !strings.Contains(string(rep), "unsteady r1 (stall: ") || strings.Contains(string(rep), "excluded") {
		t.Errorf("report (%v) does not flag the kept unsteady repetition:\n%s", err, rep)
	}
	rep, err = exec.Command(bin, "report", filepath.Join(out, "latest"), "--exclude-unsteady").CombinedOutput()
	if err != nil || !strings.Contains(string(rep), ") excluded") {
		t.Errorf("report --exclude-unsteady (%v) does not say the repetition was excluded:\n%s", err, rep)
	}
}
