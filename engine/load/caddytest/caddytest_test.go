//go:build unix

package caddytest

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestBinaryMissing: without Caddy (no BENCHFLOW_CADDY, an empty cache,
// nothing on PATH) a test skips saying how to build it, and fails instead
// under CI=true. The test runs itself as a child for each case.
func TestBinaryMissing(t *testing.T) {
	if os.Getenv("CADDYTEST_CHILD") == "1" {
		Binary(t)
		t.Fatal("Binary returned without Caddy")
	}
	empty := t.TempDir()
	for _, c := range []struct {
		ci   string
		code int
		want []string
	}{
		{"", 0, []string{"--- SKIP", "Caddy not found", "build.sh", "make caddy"}},
		{"true", 1, []string{"--- FAIL", "Caddy not found", "CI=true: CI must run the real-Caddy tests"}},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestBinaryMissing$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), "CADDYTEST_CHILD=1", Env+"=", CacheEnv+"="+empty, "PATH="+empty, "CI="+c.ci)
		out, err := cmd.CombinedOutput()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != c.code {
			t.Errorf("CI=%q: exit status %d, want %d:\n%s", c.ci, code, c.code, out)
		}
		for _, w := range c.want {
			if !strings.Contains(string(out), w) {
				t.Errorf("CI=%q: output does not say %q:\n%s", c.ci, w, out)
			}
		}
	}
}

// TestStartRetriesATakenPort: when the chosen port is taken before Caddy
// binds it, Start tries another and Caddy serves there.
func TestStartRetriesATakenPort(t *testing.T) {
	Binary(t) // skips (or fails under CI=true) without Caddy
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	taken := ln.Addr().(*net.TCPAddr).Port
	calls := 0
	pickPort = func(t testing.TB) int {
		calls++
		if calls == 1 {
			return taken
		}
		return freePort(t)
	}
	t.Cleanup(func() { pickPort = freePort })
	s := Start(t)
	if calls != 2 || s.Port == taken {
		t.Fatalf("%d ports chosen, serving on %d (taken: %d): want a second port", calls, s.Port, taken)
	}
	if es := s.Access(t); len(es) < 2 || es[0].Request.Proto != "HTTP/1.1" || es[len(es)-1].Request.Proto != "HTTP/3.0" {
		t.Errorf("access log %+v: want the readiness checks over HTTP/1.1 and HTTP/3", es)
	}
}
