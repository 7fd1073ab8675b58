package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The test binary doubles as a helper inside the sandbox
// (SANDBOX_TEST_HELPER names what it does).
func TestMain(m *testing.M) {
	switch os.Getenv("SANDBOX_TEST_HELPER") {
	case "":
		os.Exit(m.Run())
	case "dial": // dial NETWORK ADDR: exit 0 when it connects, 3 when not
		c, err := net.DialTimeout(os.Args[1], os.Args[2], 5*time.Second)
		if err != nil {
			fmt.Println(err)
			os.Exit(3)
		}
		c.Close()
		fmt.Println("connected")
		os.Exit(0)
	case "listen": // listen FILE: listen on 127.0.0.1:0, write the port to FILE, greet one
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
		if err := os.WriteFile(os.Args[1]+".tmp", []byte(port), 0o644); err != nil {
			os.Exit(1)
		}
		os.Rename(os.Args[1]+".tmp", os.Args[1])
		c, err := l.Accept()
		if err != nil {
			os.Exit(1)
		}
		c.Write([]byte("hello from inside\n"))
		c.Close()
		os.Exit(0)
	case "probe": // probe FILE PID: try to reach outside through every visible process
		probe(os.Args[1], os.Args[2])
		os.Exit(0)
	case "parent": // parent TAG: start a setsid daemon and a sleep confined (sleep 1TAG, 2TAG), print "started", wait
		exe, _ := os.Executable()
		tag := os.Args[1]
		cmd, err := Spec{ReadOnly: []string{filepath.Dir(exe)}, Env: baseEnv}.Command(context.Background(), []string{"bash", "-c",
			"setsid sleep 1" + tag + " </dev/null >/dev/null 2>&1 & sleep 2" + tag})
		if err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		if err := cmd.Start(); err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		for i := 0; i < 3000; i++ {
			if len(sleepers(tag)) == 2 {
				fmt.Println("started")
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		cmd.Wait()
		os.Exit(0)
	}
	os.Exit(2)
}

func comm(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	return strings.TrimSpace(string(b))
}

func needBwrap(t *testing.T) {
	t.Helper()
	if err := Available(); err != nil {
		t.Skipf("no sandbox here: %v", err)
	}
}

// exe is the test binary, and the read-only folder it needs inside.
func exe(t *testing.T) string {
	t.Helper()
	p, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

var baseEnv = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=" + os.Getenv("HOME")}

// run runs bash -c script confined by s and returns its output and exit
// code.
func run(t *testing.T, s Spec, script string) (string, int) {
	t.Helper()
	if s.Env == nil {
		s.Env = baseEnv
	}
	s.ReadOnly = append(s.ReadOnly, filepath.Dir(exe(t)))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd, err := s.Command(ctx, []string{"bash", "-c", script})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("running %q: %v\n%s", script, err, out.String())
	}
	return out.String(), cmd.ProcessState.ExitCode()
}

// alsoAsNobody runs the calling test again as an unprivileged user (uid
// and gid 65534 through setpriv, from a copy of the test binary that user
// can execute), where the test runs as root and the machine allows it:
// the test's non-root branch is then checked too, and its failure fails
// the test. Without setpriv, or where bwrap cannot run as that user, it
// logs why and checks nothing.
func alsoAsNobody(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		return
	}
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Log("no setpriv: the unprivileged variant is not run")
		return
	}
	dir, err := os.MkdirTemp("", "sandbox-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755)
	b, err := os.ReadFile(exe(t))
	if err != nil {
		t.Fatal(err)
	}
	cp := filepath.Join(dir, "sandbox.test")
	if err := os.WriteFile(cp, b, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--",
		cp, "-test.run", "^"+t.Name()+"$", "-test.count=1", "-test.v")
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "TMPDIR=" + os.TempDir()}
	out, err := cmd.CombinedOutput()
	switch {
	case err != nil:
		t.Errorf("as nobody: %v\n%s", err, out)
	case bytes.Contains(out, []byte("--- SKIP")):
		t.Logf("as nobody: skipped\n%s", out)
	default:
		t.Log("as nobody: passed")
	}
}

func helper(t *testing.T, mode string, args ...string) string {
	q := []string{"SANDBOX_TEST_HELPER=" + mode, exe(t)}
	for _, a := range args {
		q = append(q, "'"+a+"'")
	}
	return "env " + strings.Join(q, " ")
}

// TestHomeHidden: a marker written in $HOME lands in a private tmpfs, not
// in the real home; /home's folders are not visible.
func TestHomeHidden(t *testing.T) {
	needBwrap(t)
	home := os.Getenv("HOME")
	if home == "" || home == "/" {
		t.Skip("no HOME")
	}
	marker := fmt.Sprintf("sandbox-marker-%d", os.Getpid())
	out, code := run(t, Spec{}, `touch "$HOME/`+marker+`" && echo wrote; ls -A "$HOME" | grep -v `+marker+` | wc -l; find /home /root -mindepth 1 | grep -v `+marker+` | wc -l`)
	if code != 0 || !strings.HasPrefix(out, "wrote\n0\n0\n") {
		t.Errorf("exit %d, output %q: want the marker written in an empty home and /home, /root empty", code, out)
	}
	if _, err := os.Stat(filepath.Join(home, marker)); err == nil {
		os.Remove(filepath.Join(home, marker))
		t.Fatalf("the marker reached the real home %s", home)
	}
}

// TestReadOnlyRoot: writing anywhere but the granted folders and the
// private temporary ones fails, and no capability undoes it.
func TestReadOnlyRoot(t *testing.T) {
	needBwrap(t)
	for _, p := range []string{"/sandbox-marker", "/etc/sandbox-marker", "/usr/sandbox-marker", "/var/lib/sandbox-marker"} {
		out, code := run(t, Spec{}, "touch "+p)
		if code == 0 || !strings.Contains(out, "Read-only file system") {
			t.Errorf("touch %s: exit %d %q, want a read-only file system", p, code, out)
		}
		if _, err := os.Stat(p); err == nil {
			os.Remove(p)
			t.Errorf("%s was written on the host", p)
		}
	}
	out, code := run(t, Spec{}, "mount -o remount,rw / || umount /root || umount /run")
	if code == 0 {
		t.Errorf("remounting or unmounting worked inside: %q", out)
	}
	// Writing a sysctl fails (tried on a net.* one, in the sandbox's own
	// network namespace, with the value it has: even a failing test
	// changes nothing).
	out, code = run(t, Spec{}, "v=$(cat /proc/sys/net/core/somaxconn) && echo $v > /proc/sys/net/core/somaxconn")
	if code == 0 || !strings.Contains(out, "Read-only file system") {
		t.Errorf("writing a sysctl: exit %d %q, want a read-only file system", code, out)
	}
	out, code = run(t, Spec{}, "touch /tmp/x /var/tmp/x /dev/shm/x /run/x /run/lock/x && stat -c %a /tmp /var/tmp /dev/shm /run/lock")
	if code != 0 || out != "1777\n1777\n1777\n1777\n" {
		t.Errorf("the private temporary folders: exit %d %q", code, out)
	}
	out, _ = run(t, Spec{}, "head -c 1 /etc/shadow 2>/dev/null | wc -c")
	if strings.TrimSpace(out) != "0" {
		t.Errorf("/etc/shadow readable inside: %q bytes", out)
	}
}

// TestReadWriteAndReadOnly: a read-write folder (here under /tmp, hidden by
// the private /tmp and bound on top) is written and the file seen
// outside; a read-only folder inside it stays read-only; a read-only
// folder under a hidden home is visible.
func TestReadWriteAndReadOnly(t *testing.T) {
	needBwrap(t)
	out := t.TempDir()
	bundle := filepath.Join(out, "bundle")
	if err := os.Mkdir(bundle, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(bundle, "pipeline.hcl"), []byte("x"), 0o644)
	s := Spec{ReadWrite: []string{out}, ReadOnly: []string{bundle}, Dir: out}
	got, code := run(t, s, `echo inside > result && cat bundle/pipeline.hcl && ! touch bundle/y 2>/dev/null && pwd && stat -c %a ..`)
	// The folder leading to it keeps the machine's mode (t.TempDir's
	// parent: 0700).
	if code != 0 || got != "x"+out+"\n700\n" {
		t.Errorf("exit %d, output %q", code, got)
	}
	if b, err := os.ReadFile(filepath.Join(out, "result")); err != nil || string(b) != "inside\n" {
		t.Errorf("the file written inside, seen outside: %q %v", b, err)
	}
	if home := os.Getenv("HOME"); isDir(home) && home != "/" {
		d, err := os.MkdirTemp(home, ".sandbox-test-")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(d)
		os.WriteFile(filepath.Join(d, "f"), []byte("seen"), 0o644)
		got, code = run(t, Spec{ReadOnly: []string{d}}, "cat "+d+"/f; ls -A $HOME")
		if code != 0 || got != "seen"+filepath.Base(d)+"\n" {
			t.Errorf("a read-only folder under the hidden home: exit %d %q", code, got)
		}
	}
}

// TestSpecErrors: missing folders and unknown grants are refused before
// anything runs, naming the path or the grant.
func TestSpecErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope")
	for _, c := range []struct {
		s    Spec
		want string
	}{
		{Spec{ReadWrite: []string{missing}}, "read-write path \"" + missing + "\" must exist"},
		{Spec{ReadOnly: []string{missing}}, "read-only path \"" + missing + "\" must exist"},
		{Spec{ReadOnly: []string{""}}, "empty read-only path"},
		{Spec{Grants: []Grant{"dockr"}}, `unknown grant "dockr" (known: docker, k8s, nomad, ssh, tune, host-network)`},
	} {
		if _, err := c.s.Command(context.Background(), []string{"true"}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want %q", c.s, err, c.want)
		}
	}
	if _, err := (Spec{}).Command(context.Background(), nil); err == nil {
		t.Error("no command: no error")
	}
}

// hostListener opens a TCP listener on the host's 127.0.0.1 that accepts
// and closes.
func hostListener(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return l.Addr().String()
}

// TestNetworkOwnLoopback: the host's loopback services are out of reach,
// while two processes inside talk over their own 127.0.0.1.
func TestNetworkOwnLoopback(t *testing.T) {
	needBwrap(t)
	addr := hostListener(t)
	host, port, _ := net.SplitHostPort(addr)
	out, code := run(t, Spec{}, helper(t, "dial", "tcp", addr))
	if code != 3 {
		t.Errorf("dialing the host's %s from inside: exit %d %q, want refused", addr, code, out)
	}
	out, code = run(t, Spec{}, "exec 3<>/dev/tcp/"+host+"/"+port)
	if code == 0 {
		t.Errorf("bash reached the host's %s: %q", addr, out)
	}
	out, code = run(t, Spec{}, "ip -o link | grep -c -v ' lo:'")
	if strings.TrimSpace(out) != "0" {
		t.Errorf("interfaces beyond the loopback inside: %q", out)
	}
	out, code = run(t, Spec{}, helper(t, "listen", "/tmp/port")+` & for i in $(seq 500); do [ -s /tmp/port ] && break; sleep 0.02; done
exec 3<>/dev/tcp/127.0.0.1/$(cat /tmp/port) && head -1 <&3; wait`)
	if code != 0 || out != "hello from inside\n" {
		t.Errorf("two processes inside over their loopback: exit %d %q", code, out)
	}
}

// TestHostNetworkGrant: host-network (and the grants implying it) reach
// the host's loopback.
func TestHostNetworkGrant(t *testing.T) {
	needBwrap(t)
	addr := hostListener(t)
	for _, g := range []Grant{GrantHostNetwork, GrantNomad} {
		out, code := run(t, Spec{Grants: []Grant{g}}, helper(t, "dial", "tcp", addr))
		if code != 0 {
			t.Errorf("%s: dialing the host's %s: exit %d %q", g, addr, code, out)
		}
	}
}

// TestDockerSocket: the socket is absent without the grant, reachable with
// it.
func TestDockerSocket(t *testing.T) {
	needBwrap(t)
	out, code := run(t, Spec{}, "ls -A /run; test -e /run/docker.sock || test -e /var/run/docker.sock")
	if code == 0 || strings.TrimSpace(strings.ReplaceAll(strings.ReplaceAll(out, "lock", ""), "shm", "")) != "" {
		t.Errorf("/run inside: %q (exit %d), want only lock and shm", out, code)
	}
	out, code = run(t, Spec{}, helper(t, "dial", "unix", "/var/run/docker.sock"))
	if code != 3 {
		t.Errorf("dialing the Docker socket inside: exit %d %q", code, out)
	}
	if c, err := net.Dial("unix", "/var/run/docker.sock"); err != nil {
		t.Logf("no Docker socket outside (%v): the grant is not tried", err)
		return
	} else {
		c.Close()
	}
	out, code = run(t, Spec{Grants: []Grant{GrantDocker}}, helper(t, "dial", "unix", "/var/run/docker.sock"))
	if code != 0 {
		t.Errorf("with the docker grant: exit %d %q", code, out)
	}
}

// TestProcIsItsOwn: inside, /proc shows the sandbox's own processes
// (a pid namespace of its own), not a process of the machine; with the
// docker grant (whose provider finds containers among the machine's
// processes) it shows the machine's.
func TestProcIsItsOwn(t *testing.T) {
	needBwrap(t)
	sl := exec.Command("sleep", "300")
	if err := sl.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { sl.Process.Kill(); sl.Wait() }()
	pid := strconv.Itoa(sl.Process.Pid)
	out, code := run(t, Spec{}, "cat /proc/"+pid+"/comm")
	if code == 0 || strings.Contains(out, "sleep") {
		t.Errorf("/proc/%s inside: exit %d %q, want no such process", pid, code, out)
	}
	if _, err := os.Stat("/run/docker.sock"); err != nil {
		return
	}
	out, code = run(t, Spec{Grants: []Grant{GrantDocker}}, "cat /proc/"+pid+"/comm")
	if code != 0 || out != "sleep\n" {
		t.Errorf("docker grant: /proc/%s inside: exit %d %q", pid, code, out)
	}
}

// TestCapabilities: the command keeps exactly the listed capabilities;
// tune adds CAP_SYS_NICE and a writable /proc/sys (read here, not
// written: a test does not change the machine's sysctls).
func TestCapabilities(t *testing.T) {
	needBwrap(t)
	if os.Geteuid() != 0 {
		// As a user bwrap runs the command in a user namespace of its
		// own: the capabilities it keeps there (no more than root's
		// sandbox keeps) are that namespace's, none over the machine;
		// /proc/sys stays read-only.
		ns, _ := os.Readlink("/proc/self/ns/user")
		out, code := run(t, Spec{}, `grep CapEff /proc/self/status; grep ' /proc/sys ' /proc/self/mountinfo | tail -1; readlink /proc/self/ns/user`)
		f := strings.Fields(out)
		if code != 0 || len(f) < 12 {
			t.Fatalf("exit %d %q", code, out)
		}
		rootList := uint64(1<<0 | 1<<5 | 1<<6 | 1<<7 | 1<<10 | 1<<24)
		if got, _ := strconv.ParseUint(f[1], 16, 64); got&^rootList != 0 {
			t.Errorf("as uid %d: CapEff %x, more than root's sandbox keeps (%x)", os.Geteuid(), got, rootList)
		}
		if inside := f[len(f)-1]; inside == ns || !strings.HasPrefix(inside, "user:[") {
			t.Errorf("as uid %d: the command's user namespace is %s, the caller's is %s: want one of its own", os.Geteuid(), inside, ns)
		}
		if !strings.HasPrefix(f[7], "ro,") {
			t.Errorf("as uid %d: /proc/sys mounted %s, want ro", os.Geteuid(), f[7])
		}
		return
	}
	alsoAsNobody(t)
	// setuid 7, setgid 6, chown 0, kill 5, net_bind_service 10, sys_resource 24
	// (only those in the bounding set: a container may lack some)
	want := uint64(1<<0|1<<5|1<<6|1<<7|1<<10|1<<24) & boundingSet()
	for _, c := range []struct {
		g    []Grant
		caps uint64
		sys  string
	}{
		{nil, want, "ro"},
		// /proc/sys stays read-only with tune: only the listed sysctls
		// are bound writable on top (TestTuneGrantAllowList).
		{[]Grant{GrantTune}, want | 1<<23&boundingSet(), "ro"},
	} {
		out, code := run(t, Spec{Grants: c.g}, `grep CapEff /proc/self/status; grep ' /proc/sys ' /proc/self/mountinfo | tail -1`)
		f := strings.Fields(out)
		if code != 0 || len(f) < 8 {
			t.Fatalf("%v: exit %d %q", c.g, code, out)
		}
		got, _ := strconv.ParseUint(f[1], 16, 64)
		if got != c.caps {
			t.Errorf("%v: CapEff %x, want %x", c.g, got, c.caps)
		}
		if !strings.HasPrefix(f[7], c.sys+",") {
			t.Errorf("%v: /proc/sys mounted %s, want %s", c.g, f[7], c.sys)
		}
	}
}

// TestDieWithParent: killing the process that started the sandbox
// (SIGKILL: nothing of it runs) ends the command inside and the daemon it
// started.
func TestDieWithParent(t *testing.T) {
	needBwrap(t)
	tag := fmt.Sprintf("%07d", (time.Now().UnixNano()/1000+int64(os.Getpid()))%1e7)
	p := exec.Command(exe(t), tag)
	p.Env = append(os.Environ(), "SANDBOX_TEST_HELPER=parent")
	stdout, _ := p.StdoutPipe()
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	var started string
	if _, err := fmt.Fscan(stdout, &started); err != nil || started != "started" {
		p.Process.Kill()
		p.Wait()
		t.Fatalf("the parent did not start the sandbox: %q %v", started, err)
	}
	p.Process.Kill()
	p.Wait()
	for i := 0; len(sleepers(tag)) > 0; i++ {
		if i == 3000 {
			for _, q := range sleepers(tag) {
				syscall.Kill(q, syscall.SIGKILL)
			}
			t.Fatalf("the sleeps outlived their parent by a minute")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestCancelTerminates: a done context sends SIGTERM to the command
// (which may clean up), not SIGKILL to bwrap.
func TestCancelTerminates(t *testing.T) {
	needBwrap(t)
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	cmd, err := Spec{ReadWrite: []string{dir}, Env: baseEnv}.Command(ctx, []string{"bash", "-c",
		`trap 'echo terminated > ` + dir + `/note; exit 7' TERM; echo up; while :; do sleep 0.1; done`})
	if err != nil {
		t.Fatal(err)
	}
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var up string
	fmt.Fscan(stdout, &up)
	cancel()
	cmd.Wait()
	if b, _ := os.ReadFile(filepath.Join(dir, "note")); string(b) != "terminated\n" {
		t.Errorf("the command's TERM trap did not run (note %q, state %v)", b, cmd.ProcessState)
	}
}

// TestDescribe: one line per fact, and every grant says what it opens.
func TestDescribe(t *testing.T) {
	base := strings.Join(Spec{ReadWrite: []string{"/out"}}.Describe(), "\n")
	for _, w := range []string{
		"file system: read-only except /out and a private /tmp",
		"home folders: hidden",
		"network: its own loopback only",
		"Docker socket and other daemons' sockets in /run are not reachable",
		"sysctls: read-only",
		"processes: only its own are visible (a pid namespace of its own",
		"daemons included, is killed when the run ends",
		"no terminal",
		"not limited: CPU, memory",
		"capabilities: only switch user, switch group, chown, signal any process, bind ports below 1024",
	} {
		if !strings.Contains(base, w) {
			t.Errorf("default Describe lacks %q:\n%s", w, base)
		}
	}
	for _, c := range []struct {
		g    Grant
		want []string
	}{
		{GrantDocker, []string{"docker (granted): the Docker socket", "root on this machine", "network: the host's (implied by docker)"}},
		{GrantK8s, []string{"k8s (granted): the kubeconfig", "network: the host's (implied by k8s)"}},
		{GrantNomad, []string{"nomad (granted)", "network: the host's (implied by nomad)"}},
		{GrantTune, []string{"tune (granted): only the sysctls net.*", "own network namespace only", "network: its own loopback only"}},
		{GrantHostNetwork, []string{"network: the host's (granted host-network)"}},
	} {
		d := strings.Join(Spec{Grants: []Grant{c.g}}.Describe(), "\n")
		for _, w := range c.want {
			if !strings.Contains(d, w) {
				t.Errorf("%s: Describe lacks %q:\n%s", c.g, w, d)
			}
		}
	}
	// A capability the machine cannot give is not claimed.
	if boundingSet()&(1<<24) == 0 && strings.Contains(base, "raise rlimits") {
		t.Errorf("CAP_SYS_RESOURCE is not in the bounding set, yet:\n%s", base)
	}
	d := strings.Join(Spec{Grants: []Grant{GrantTune, GrantHostNetwork}}.Describe(), "\n")
	if !strings.Contains(d, "net.* sysctls apply to the host's network") {
		t.Errorf("tune with the host network:\n%s", d)
	}
	for _, g := range Grants() {
		if got, err := ParseGrant(string(g)); err != nil || got != g {
			t.Errorf("ParseGrant(%q) = %q, %v", g, got, err)
		}
	}
}

// TestArgsOrder: the hidden places come before the caller's binds (bwrap
// mounts in order), parents before children.
func TestArgsOrder(t *testing.T) {
	d := t.TempDir()
	sub := filepath.Join(d, "sub")
	os.Mkdir(sub, 0o755)
	a, err := Spec{ReadWrite: []string{d}, ReadOnly: []string{sub}}.args()
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Join(a, " ")
	iTmp, iRoot := strings.Index(s, "--tmpfs /tmp "), strings.Index(s, "--tmpfs /root ")
	iRW, iRO := strings.Index(s, "--bind "+d+" "+d), strings.Index(s, "--ro-bind "+sub+" "+sub)
	if iTmp < 0 || iRoot < 0 || iRW < 0 || iRO < 0 || iRW < iTmp || iRW < iRoot || iRO < iRW {
		t.Errorf("order: %s", s)
	}
	if !strings.Contains(s, "--unshare-net") || !strings.Contains(s, "--unshare-pid") || !strings.Contains(s, "--cap-drop ALL") {
		t.Errorf("namespaces or capabilities: %s", s)
	}
}

// benchflowBin is the real binary (make build), or the test skips.
func benchflowBin(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("BENCHFLOW_BIN")
	if bin == "" {
		bin = "../../bin/benchflow"
	}
	abs, err := filepath.Abs(bin)
	if err == nil {
		_, err = os.Stat(abs)
	}
	if err != nil {
		t.Skipf("no benchflow binary (%v): run make build or set BENCHFLOW_BIN", err)
	}
	return abs
}

// TestNginxInside: Debian's nginx starts inside as root, its workers
// switch to www-data, it serves on port 80 of the sandbox's own loopback,
// and benchflow load inside reaches it (200 requests, all 200 OK).
func TestNginxInside(t *testing.T) {
	needBwrap(t)
	bin := benchflowBin(t)
	if _, err := os.Stat("/usr/sbin/nginx"); err != nil {
		t.Skip("no /usr/sbin/nginx (apt-get install nginx)")
	}
	d := t.TempDir()
	// The workers (www-data) read the document root: the folders on its
	// way keep their modes inside.
	os.Chmod(filepath.Dir(d), 0o755)
	os.Chmod(d, 0o755)
	www := filepath.Join(d, "www")
	os.Mkdir(www, 0o755)
	os.WriteFile(filepath.Join(www, "index.html"), []byte("hello\n"), 0o644)
	conf := `USER
worker_processes 2;
pid D/nginx.pid;
error_log D/error.log;
events {}
http {
  access_log off;
  client_body_temp_path D/body;
  proxy_temp_path D/proxy;
  fastcgi_temp_path D/fastcgi;
  uwsgi_temp_path D/uwsgi;
  scgi_temp_path D/scgi;
  server { listen 127.0.0.1:PORT; root D/www; }
}
`
	// As root: port 80 (CAP_NET_BIND_SERVICE) and workers as www-data
	// (CAP_SETUID); otherwise nginx runs as the caller, on port 8080.
	port, user, directive := "80", "www-data", "user www-data;"
	if os.Geteuid() != 0 {
		port, user, directive = "8080", strings.TrimSpace(mustOutput(t, "id", "-un")), ""
	}
	conf = strings.NewReplacer("D/", d+"/", "PORT", port, "USER", directive).Replace(conf)
	os.WriteFile(filepath.Join(d, "nginx.conf"), []byte(conf), 0o644)
	script := `/usr/sbin/nginx -e ` + d + `/startup.log -p ` + d + ` -c ` + d + `/nginx.conf -g 'daemon off;' & np=$!
for i in $(seq 500); do (exec 3<>/dev/tcp/127.0.0.1/` + port + `) 2>/dev/null && break; sleep 0.02; done
ps -o user= --ppid $np | sort -u
` + bin + ` load --json -c 2 -n 200 http://127.0.0.1:` + port + `/index.html > ` + d + `/load.json; rc=$?
kill -QUIT $np; wait $np; echo nginx exit $?
exit $rc`
	out, code := run(t, Spec{ReadWrite: []string{d}, ReadOnly: []string{bin}}, script)
	logs, _ := os.ReadFile(filepath.Join(d, "error.log"))
	if code != 0 || out != user+"\nnginx exit 0\n" {
		t.Fatalf("exit %d, output %q\nnginx's log:\n%s", code, out, logs)
	}
	var j struct {
		Requests int64            `json:"requests"`
		Status   map[string]int64 `json:"status"`
	}
	b, _ := os.ReadFile(filepath.Join(d, "load.json"))
	if err := json.Unmarshal(b, &j); err != nil || j.Requests != 200 || j.Status["200"] != 200 {
		t.Errorf("load inside: %v %s", err, b)
	}
}

// TestApplyInside: the quickstart runs to completion in the sandbox, its
// results in the read-write folder; the state folder is the private /tmp
// (no tune step: nothing to restore after the run). The verdict's machine
// accounting reads the whole machine's /proc.
func TestApplyInside(t *testing.T) {
	needBwrap(t)
	bin := benchflowBin(t)
	pipeline, err := filepath.Abs("../../pipelines/quickstart.hcl")
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	env := append(append([]string{}, baseEnv...), "BENCHFLOW_STATE_DIR=/tmp/benchflow-state")
	s := Spec{ReadWrite: []string{out}, ReadOnly: []string{bin, filepath.Dir(pipeline)}, Env: env, Dir: out}
	got, code := run(t, s, bin+" apply "+pipeline+" --var duration=1s --var connections=4 --out "+out+" -q")
	if code != 0 {
		t.Fatalf("apply inside: exit %d\n%s", code, got)
	}
	var m struct {
		Status string `json:"status"`
		Trials []struct {
			Status string `json:"status"`
		} `json:"trials"`
	}
	b, err := os.ReadFile(filepath.Join(out, "latest", "manifest.json"))
	if err != nil {
		t.Fatalf("no manifest in %s: %v\n%s", out, err, got)
	}
	if err := json.Unmarshal(b, &m); err != nil || m.Status != "ok" || len(m.Trials) != 12 {
		t.Errorf("manifest: %v status %q, %d trials", err, m.Status, len(m.Trials))
	}
	for _, f := range []string{"trials.parquet", "processes.parquet"} {
		if _, err := os.Stat(filepath.Join(out, "latest", f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// TestK8sGrant: the kubeconfig, hidden with the home folders, is readable
// with the k8s grant only, at the path $KUBECONFIG names.
func TestK8sGrant(t *testing.T) {
	needBwrap(t)
	home := os.Getenv("HOME")
	if !isDir(home) || home == "/" {
		t.Skip("no HOME")
	}
	d, err := os.MkdirTemp(home, ".sandbox-kube-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(d)
	kc := filepath.Join(d, "config")
	os.WriteFile(kc, []byte("apiVersion: v1\n"), 0o600)
	env := append(append([]string{}, baseEnv...), "KUBECONFIG="+kc)
	if out, code := run(t, Spec{Env: env}, "cat $KUBECONFIG"); code == 0 {
		t.Errorf("the kubeconfig readable without the grant: %q", out)
	}
	if out, code := run(t, Spec{Env: env, Grants: []Grant{GrantK8s}}, "cat $KUBECONFIG; ls -A "+d); code != 0 || out != "apiVersion: v1\nconfig\n" {
		t.Errorf("with the k8s grant: exit %d %q", code, out)
	}
}

// TestNomadGrantPIDFile: APISIX's pid file, hidden with the home folders,
// is readable with the nomad grant only, at the path APISIX_PID_FILE
// names (the nomad provider finds the gateway's nginx by it here).
func TestNomadGrantPIDFile(t *testing.T) {
	needBwrap(t)
	home := os.Getenv("HOME")
	if !isDir(home) || home == "/" {
		t.Skip("no HOME")
	}
	d, err := os.MkdirTemp(home, ".sandbox-apisix-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(d)
	pf := filepath.Join(d, "nginx.pid")
	os.WriteFile(pf, []byte("4242\n"), 0o644)
	env := append(append([]string{}, baseEnv...), "APISIX_PID_FILE="+pf)
	if out, code := run(t, Spec{Env: env}, "cat $APISIX_PID_FILE"); code == 0 {
		t.Errorf("the pid file readable without the grant: %q", out)
	}
	if out, code := run(t, Spec{Env: env, Grants: []Grant{GrantNomad}}, "cat $APISIX_PID_FILE"); code != 0 || out != "4242\n" {
		t.Errorf("with the nomad grant: exit %d %q", code, out)
	}
	if w := strings.Join(Spec{Env: env, Grants: []Grant{GrantNomad}}.Describe(), "\n"); !strings.Contains(w, "APISIX's pid file "+pf+" is readable") {
		t.Errorf("Describe does not name the pid file:\n%s", w)
	}
}

// TestEnvIsWhole: the child's environment is Spec.Env and PWD, none of
// the caller's when it is nil.
func TestEnvIsWhole(t *testing.T) {
	needBwrap(t)
	t.Setenv("SANDBOX_SECRET", "leak")
	for _, env := range [][]string{nil, {"A=1"}} {
		cmd, err := Spec{Env: env}.Command(context.Background(), []string{"/usr/bin/env"})
		if err != nil {
			t.Fatal(err)
		}
		out, err := cmd.Output()
		// bwrap sets PWD to the working folder.
		want := strings.Join(append(append([]string{}, env...), "PWD=/"), "\n") + "\n"
		if err != nil || string(out) != want {
			t.Errorf("Env %q: %v, the child's environment %q", env, err, out)
		}
	}
}

// TestAvailableExplains: without a working bwrap, Available and Command
// say how to install it and that --no-sandbox runs unconfined.
func TestAvailableExplains(t *testing.T) {
	defer func(p string) { bwrapPath = p }(bwrapPath)
	for _, p := range []string{"bwrap-not-installed-here", "false"} {
		bwrapPath = p
		err := Available()
		if err == nil || !strings.Contains(err.Error(), "apt-get install bubblewrap") || !strings.Contains(err.Error(), "--no-sandbox") {
			t.Errorf("bwrap %q: Available() = %v", p, err)
		}
	}
	// An old bwrap runs the simple test but not the sandbox's options.
	old := filepath.Join(t.TempDir(), "bwrap")
	os.WriteFile(old, []byte("#!/bin/sh\n[ \"$1\" = --ro-bind ] && exit 0\necho 'bwrap: Unknown option --perms' >&2\nexit 1\n"), 0o755)
	bwrapPath = old
	if err := Available(); err == nil || !strings.Contains(err.Error(), "(the default sandbox) true failed: bwrap: Unknown option --perms") || !strings.Contains(err.Error(), "--no-sandbox") {
		t.Errorf("an old bwrap: Available() = %v", err)
	}
	bwrapPath = "bwrap-not-installed-here"
	if _, err := (Spec{}).Command(context.Background(), []string{"true"}); err == nil || !strings.Contains(err.Error(), "apt-get install bubblewrap") {
		t.Errorf("Command without bwrap: %v", err)
	}
}

func mustOutput(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).Output()
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return string(out)
}

// TestTuneNetSysctlIsTheSandboxs: with the tune grant a net.* sysctl is
// writable, and in the sandbox's own network namespace it changes that
// namespace's value, not the machine's.
func TestTuneNetSysctlIsTheSandboxs(t *testing.T) {
	needBwrap(t)
	if os.Geteuid() != 0 {
		// As a user the tune grant writes nothing of the machine's: the
		// write fails, and the machine's value stays.
		const p = "/proc/sys/net/core/somaxconn"
		before, err := os.ReadFile(p)
		if err != nil {
			t.Skip(err)
		}
		out, code := run(t, Spec{Grants: []Grant{GrantTune}}, `echo 129 > `+p+` && echo wrote`)
		if after, _ := os.ReadFile(p); string(after) != string(before) {
			t.Errorf("as uid %d the machine's %s changed from %s to %s (exit %d %q)", os.Geteuid(), p, before, after, code, out)
		}
		return
	}
	alsoAsNobody(t)
	const p = "/proc/sys/net/core/somaxconn"
	b, err := os.ReadFile(p)
	if err != nil {
		t.Skip(err)
	}
	host := strings.TrimSpace(string(b))
	ns, _ := os.Readlink("/proc/self/ns/net")
	n, _ := strconv.Atoi(host)
	want := strconv.Itoa(n - 1)
	// Written only when the namespace is not the machine's: a broken
	// sandbox leaves the machine alone and fails the test.
	out, code := run(t, Spec{Grants: []Grant{GrantTune}}, `[ "$(readlink /proc/self/ns/net)" != "`+ns+`" ] || { echo "the machine's network namespace"; exit 9; }
echo `+want+` > `+p+` && cat `+p)
	if code != 0 || strings.TrimSpace(out) != want {
		t.Errorf("writing %s inside: exit %d %q", p, code, out)
	}
	if b, _ := os.ReadFile(p); strings.TrimSpace(string(b)) != host {
		os.WriteFile(p, []byte(host), 0o644)
		t.Errorf("the machine's %s changed to %s (put back to %s)", p, b, host)
	}
}

// TestDockerGrantRunsDockerCLI: with the docker grant the docker CLI
// inside reaches the engine (its home, and ~/.docker, hidden).
func TestDockerGrantRunsDockerCLI(t *testing.T) {
	needBwrap(t)
	if _, err := exec.LookPath("docker"); err != nil {
		t.Skip("no docker CLI")
	}
	if err := exec.Command("docker", "info", "--format", "{{.ServerVersion}}").Run(); err != nil {
		t.Skipf("no Docker engine here: %v", err)
	}
	out, code := run(t, Spec{Grants: []Grant{GrantDocker}}, "docker info --format '{{.ServerVersion}}'")
	if code != 0 || strings.TrimSpace(out) == "" {
		t.Errorf("docker info inside with the grant: exit %d %q", code, out)
	}
	if out, code := run(t, Spec{}, "docker info --format '{{.ServerVersion}}'"); code == 0 {
		t.Errorf("docker info inside without the grant worked: %q", out)
	}
}
