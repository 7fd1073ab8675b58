package hostproc

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"testing"
)

func TestListenersFindsThisProcess(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	pids, err := Listeners(net.ParseIP("127.0.0.1"), port)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(pids, os.Getpid()) {
		t.Fatalf("Listeners(127.0.0.1, %d) = %v, want it to hold this process %d", port, pids, os.Getpid())
	}
	if Comm(os.Getpid()) == "" {
		t.Error("Comm of this process is empty")
	}
	// Another address, nil IP and a port nobody listens on.
	if pids, _ := Listeners(net.ParseIP("127.0.0.2"), port); slices.Contains(pids, os.Getpid()) {
		t.Errorf("Listeners(127.0.0.2) = %v: a socket bound to 127.0.0.1 matched another address", pids)
	}
	if pids, _ := Listeners(nil, port); !slices.Contains(pids, os.Getpid()) {
		t.Errorf("Listeners(nil) = %v, want this process", pids)
	}
	ln2, _ := net.Listen("tcp", "127.0.0.1:0")
	free := ln2.Addr().(*net.TCPAddr).Port
	ln2.Close()
	if pids, _ := Listeners(nil, free); len(pids) != 0 {
		t.Errorf("Listeners on closed port %d = %v", free, pids)
	}
	if _, err := Listeners(nil, 70000); err == nil {
		t.Error("port 70000 accepted")
	}
}

// A socket shared by a parent and its child (nginx's master and workers)
// gives both pids; a connected (not listening) socket gives none.
func TestListenersSharedSocket(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not found")
	}
	cmd := exec.Command("python3", "-c", `
import socket, os, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen()
pid = os.fork()
if pid == 0:
    time.sleep(30); os._exit(0)
print(s.getsockname()[1], pid, flush=True)
sys.stdin.read()
os.kill(pid, 9)
`)
	stdin, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); cmd.Wait() }()
	var port, child int
	line, _ := bufio.NewReader(out).ReadString('\n')
	if _, err := fmt.Sscan(line, &port, &child); err != nil {
		t.Fatalf("reading %q: %v", line, err)
	}
	pids, err := Listeners(net.ParseIP("127.0.0.1"), port)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(pids, cmd.Process.Pid) || !slices.Contains(pids, child) {
		t.Fatalf("Listeners = %v, want parent %d and child %d", pids, cmd.Process.Pid, child)
	}
	c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	local := c.LocalAddr().(*net.TCPAddr).Port
	if pids, _ := Listeners(nil, local); len(pids) != 0 {
		t.Errorf("a client's connected socket on port %d counted as listening: %v", local, pids)
	}
}

func TestParseHexIP(t *testing.T) {
	for in, want := range map[string]string{
		"0100007F":                         "127.0.0.1",
		"00000000":                         "0.0.0.0",
		"00000000000000000000000001000000": "::1",
		"0000000000000000FFFF00000100007F": "127.0.0.1",
	} {
		ip, err := parseHexIP(in)
		if err != nil || ip.String() != want {
			t.Errorf("parseHexIP(%s) = %v, %v; want %s", in, ip, err, want)
		}
	}
	for _, bad := range []string{"", "zz", "0100"} {
		if _, err := parseHexIP(bad); err == nil {
			t.Errorf("parseHexIP(%q) accepted", bad)
		}
	}
}
