package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestLoadExplainsReopenedConnections loads a real nginx that closes a
// keep-alive connection after 10 requests (keepalive_requests 10): with 4
// connections and 400 requests the loader connects about 40 times, and the
// Connect line says why its count exceeds the 4 connections.
func TestLoadExplainsReopenedConnections(t *testing.T) {
	addr := startKeepaliveNginx(t, 10)
	out, errOut, code := runLoad(t, "-c", "4", "-t", "1", "-n", "400", "--latency", "http://"+addr+"/")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	t.Logf("\n%s", out)
	m := regexp.MustCompile(`Connect: (\d+) connections \((\d+) \+ (\d+) reopened after the server closed them: keep-alive limit\?\)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("the Connect line does not explain the reopened connections:\n%s", out)
	}
	total, _ := strconv.Atoi(m[1])
	first, _ := strconv.Atoi(m[2])
	again, _ := strconv.Atoi(m[3])
	if first != 4 || first+again != total || total < 40 || total > 44 {
		t.Errorf("%q: want 4 + about 36 reopened = about 40 connections for 400 requests at 10 per connection", m[0])
	}
	if !strings.Contains(out, fmt.Sprintf("Reconnects: %d", again)) {
		t.Errorf("the Reconnects line disagrees with the Connect line:\n%s", out)
	}
}

// startKeepaliveNginx runs Debian's nginx on a free loopback port with
// keepalive_requests set, until the test ends.
func startKeepaliveNginx(t *testing.T, keepaliveRequests int) string {
	t.Helper()
	nginx := "/usr/sbin/nginx"
	if _, err := os.Stat(nginx); err != nil {
		t.Skip("needs Debian's nginx (/usr/sbin/nginx)")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	dir := t.TempDir()
	conf := fmt.Sprintf(`worker_processes 1;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log;
events { worker_connections 256; }
http {
    access_log off;
    keepalive_requests %[3]d;
    client_body_temp_path %[1]s/body;
    proxy_temp_path %[1]s/proxy;
    fastcgi_temp_path %[1]s/fastcgi;
    uwsgi_temp_path %[1]s/uwsgi;
    scgi_temp_path %[1]s/scgi;
    server {
        listen %[2]s;
        location / { return 200 "hello\n"; }
    }
}
`, dir, addr, keepaliveRequests)
	if err := os.WriteFile(filepath.Join(dir, "nginx.conf"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(nginx, "-p", dir, "-c", filepath.Join(dir, "nginx.conf"), "-g", "daemon off;")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var log strings.Builder
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	})
	for i := 0; ; i++ {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return addr
		}
		select {
		case err := <-exited:
			t.Fatalf("nginx exited: %v\n%s", err, log.String())
		case <-time.After(20 * time.Millisecond):
		}
		if i > 500 {
			t.Fatalf("nginx does not listen on %s:\n%s", addr, log.String())
		}
	}
}
