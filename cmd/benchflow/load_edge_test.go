package main

import (
	"os/exec"
	"strings"
	"testing"
)

// benchflow load -c above `ulimit -n` fails up front, naming the limit and
// both ways out, and sends nothing.
func TestLoadConnectionsOverUlimit(t *testing.T) {
	srv, hits := helloServer(t)
	cmd := exec.Command("sh", "-c", `ulimit -n 256 && exec "$0" load -c 1100 -d 2s "$1"`, bin, srv.URL+"/")
	b, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("want exit 1, got success:\n%s", b)
	}
	out := string(b)
	for _, want := range []string{"1100 connections", "RLIMIT_NOFILE", "ulimit -n", "use at most"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("%d requests reached the server", n)
	}
}

// -d 0 is refused, as wrk refuses it; -n without -d says how the load is
// bounded in its header instead of a wall time known only afterwards.
func TestLoadDurationAndRequestBounds(t *testing.T) {
	srv, _ := helloServer(t)
	_, stderr, code := runLoad(t, "-d", "0", srv.URL+"/")
	if code != 1 || !strings.Contains(stderr, "-d/--duration 0: must be more than 0") {
		t.Errorf("-d 0: exit %d\n%s", code, stderr)
	}
	stdout, stderr, code := runLoad(t, "-n", "50", "-c", "2", srv.URL+"/")
	if code != 0 || !strings.HasPrefix(stdout, "Running 50-request test @ ") {
		t.Errorf("-n 50: exit %d, header:\n%s%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "50 requests in ") {
		t.Errorf("-n 50: totals line missing:\n%s", stdout)
	}
}
