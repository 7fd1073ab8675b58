package main

import (
	"bufio"
	"encoding/json"
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

// TestServeH3: `benchflow serve --h3` (no --tls: it implies it) prints an
// https:// address and the load command for it on stderr, and `benchflow
// load --h3` as printed loads it over HTTP/3; with --close and --h3-0rtt
// most connections send early data, which the JSON counts.
func TestServeH3(t *testing.T) {
	cmd := exec.Command(bin, "serve", "--h3", "--addr", "127.0.0.1:0")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	errOut, err := cmd.StderrPipe()
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
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on https://")
	if err != nil || !ok {
		t.Fatalf("serve --h3 printed %q (%v), want its https:// address", line, err)
	}
	said, _ := bufio.NewReader(errOut).ReadString('\n')
	b, err := exec.Command(bin, "load", "--h3", "-c", "2", "-n", "50", "https://"+addr+"/").CombinedOutput()
	if err != nil || !strings.Contains(string(b), "HTTP/3 over QUIC") || !strings.Contains(string(b), "Requests/sec:") {
		t.Fatalf("load --h3: %v\n%s", err, b)
	}
	b, err = exec.Command(bin, "load", "--h3", "--close", "--h3-0rtt", "-c", "2", "-n", "40", "--json", "https://"+addr+"/").Output()
	if err != nil {
		t.Fatalf("load --h3 --close --h3-0rtt: %v\n%s", err, b)
	}
	var j struct {
		Requests int64  `json:"requests"`
		Errors   int64  `json:"errors"`
		Used0RTT *int64 `json:"used_0rtt"`
	}
	if err := json.Unmarshal(b, &j); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	if j.Requests != 40 || j.Errors != 0 || j.Used0RTT == nil || *j.Used0RTT < 30 {
		t.Errorf("requests %d, errors %d, used_0rtt %v: want 40, 0 and most of the 40 connections", j.Requests, j.Errors, j.Used0RTT)
	}
	if want := "benchflow load --h3 https://" + addr + "/"; !strings.Contains(said, want) {
		t.Errorf("serve --h3 said %q on stderr, want it to print %q", said, want)
	}
}

// TestServeH3NeedsTLS: --h3 with --tls=false is refused, saying why.
func TestServeH3NeedsTLS(t *testing.T) {
	b, err := exec.Command(bin, "serve", "--h3", "--tls=false", "--addr", "127.0.0.1:0").CombinedOutput()
	if err == nil || !strings.Contains(string(b), "--h3 with --tls=false") || !strings.Contains(string(b), "always TLS") {
		t.Errorf("serve --h3 --tls=false: %v\n%s\nwant a refusal naming both flags", err, b)
	}
}
