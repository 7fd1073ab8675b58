package main

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startServeBin runs `benchflow serve --addr 127.0.0.1:0 ARGS…` and returns
// its address; the process is stopped when the test ends.
func startServeBin(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"serve", "--addr", "127.0.0.1:0"}, args...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on http://")
	if err != nil || !ok {
		t.Fatalf("serve printed %q (%v), want its address", line, err)
	}
	return addr
}

// TestServeIdleTimeout: `benchflow serve --idle-timeout` closes keep-alive
// connections left idle, so idle clients cannot starve new ones; the
// reads are bounded by a 10 s deadline, far beyond the 300 ms timeout.
func TestServeIdleTimeout(t *testing.T) {
	addr := startServeBin(t, "--idle-timeout", "300ms")
	for i := range 20 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: t\r\n\r\n")
		r := bufio.NewReader(c)
		resp, err := http.ReadResponse(r, nil)
		if err != nil || resp.StatusCode != 200 || resp.Close {
			t.Fatalf("connection %d: %v, %v; want a kept-alive 200", i, resp, err)
		}
		io.Copy(io.Discard, resp.Body)
		if _, err := r.ReadByte(); !errors.Is(err, io.EOF) {
			t.Fatalf("idle connection %d: read %v, want the server to close it (EOF)", i, err)
		}
	}
}

func TestServeIdleTimeoutFlag(t *testing.T) {
	out, err := exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--idle-timeout", "-1s").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "--idle-timeout -1s: must not be negative") {
		t.Errorf("serve --idle-timeout -1s: %v, %s; want it refused", err, out)
	}
	help, _ := exec.Command(bin, "serve", "--help").CombinedOutput()
	if !strings.Contains(string(help), "--idle-timeout DUR") || !strings.Contains(string(help), "(default 1m0s)") {
		t.Errorf("serve --help does not document --idle-timeout and its default:\n%s", help)
	}
}
