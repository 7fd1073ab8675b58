package sandbox

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/benchflow/benchflow/engine/procfs"
)

// probe is the hostile command: for every process it sees it tries to
// read file (a file of the machine, outside the sandbox) through
// /proc/PID/root and to ptrace it; then it tries to signal host (a
// process of the machine). It prints one line per success ("read PID",
// "ptrace PID", "kill PID"), and "visible PID…" first.
func probe(file, host string) {
	pids, _ := procfs.PIDs("")
	var vis []string
	self := os.Getpid()
	for _, p := range pids {
		vis = append(vis, strconv.Itoa(p))
	}
	fmt.Println("visible", strings.Join(vis, " "))
	for _, p := range pids {
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/root%s", p, file)); err == nil {
			fmt.Printf("read %d %q\n", p, b)
		}
		if p == self {
			continue
		}
		if err := syscall.PtraceAttach(p); err == nil {
			fmt.Printf("ptrace %d\n", p)
			var ws syscall.WaitStatus
			syscall.Wait4(p, &ws, syscall.WALL, nil)
			syscall.PtraceDetach(p)
		}
	}
	if n, err := strconv.Atoi(host); err == nil {
		if err := syscall.Kill(n, 0); err == nil {
			fmt.Printf("kill %d\n", n)
		}
	}
}

// TestNothingOutsideReachable: from inside, no process of the machine is
// visible; no visible process's /proc/PID/root reaches a file the test
// wrote outside; no visible process but the probe's own family can be
// traced; a process of the machine cannot be signalled. As root (how CI
// reproduces) and, where the machine allows, as nobody.
func TestNothingOutsideReachable(t *testing.T) {
	needBwrap(t)
	secretDir, err := os.MkdirTemp("", "sandbox-secret-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(secretDir)
	os.Chmod(secretDir, 0o755)
	secret := filepath.Join(secretDir, "secret")
	if err := os.WriteFile(secret, []byte("the reader's secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	sl := exec.Command("sleep", "300")
	if err := sl.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { sl.Process.Kill(); sl.Wait() }()
	host := strconv.Itoa(sl.Process.Pid)

	out, code := run(t, Spec{}, helper(t, "probe", secret, host))
	if code != 0 {
		t.Fatalf("probe: exit %d\n%s", code, out)
	}
	check := func(who, out string) {
		t.Helper()
		sc := bufio.NewScanner(strings.NewReader(out))
		var visible []string
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) == 0 {
				continue
			}
			switch f[0] {
			case "visible":
				visible = f[1:]
			case "read", "kill":
				t.Errorf("%s: reached outside: %s", who, sc.Text())
			case "ptrace":
				// Tracing a process of its own sandbox gains nothing; every
				// visible process must be the sandbox's (below).
			}
		}
		if len(visible) == 0 {
			t.Fatalf("%s: the probe saw no process:\n%s", who, out)
		}
		for _, p := range visible {
			if p == host {
				t.Errorf("%s: the machine's process %s is visible inside", who, p)
			}
		}
		// Its own pid namespace: a handful of processes (bwrap's init,
		// bash, env, the probe), not the machine's hundreds.
		if len(visible) > 8 {
			t.Errorf("%s: %d processes visible inside: %v", who, len(visible), visible)
		}
	}
	check("root", out)

	// ptrace of bwrap's init inside must not lead outside either: its
	// root is the sandbox's (checked by the read above).

	if os.Geteuid() == 0 {
		if _, err := exec.LookPath("setpriv"); err != nil {
			t.Log("no setpriv: the unprivileged variant is not run")
			return
		}
		exeDir, err := os.MkdirTemp("", "sandbox-nobody-")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(exeDir)
		os.Chmod(exeDir, 0o755)
		cp := filepath.Join(exeDir, "sandbox.test")
		b, err := os.ReadFile(exe(t))

		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(cp, b, 0o755); err != nil {
			t.Fatal(err)
		}
		script := "setpriv --reuid=65534 --regid=65534 --clear-groups -- bwrap --unshare-user --unshare-pid --die-with-parent --new-session --ro-bind / / --proc /proc --dev /dev --tmpfs /tmp --ro-bind " + exeDir + " " + exeDir + " -- env SANDBOX_TEST_HELPER=probe " + cp + " " + secret + " " + host
		c := exec.Command("bash", "-c", script)
		o, err := c.CombinedOutput()
		if err != nil {
			t.Skipf("bwrap as nobody does not run here (%v): %s", err, o)
		}
		check("nobody", string(o))
		t.Log("as nobody: nothing reached either")
	}
}

// TestNothingOutlives: a setsid daemon, a double fork and a process that
// ignores SIGTERM are all gone once the command returns, whether it ends
// normally, fails, or is cancelled.
func TestNothingOutlives(t *testing.T) {
	needBwrap(t)
	for _, c := range []struct {
		name   string
		end    string
		cancel bool
	}{
		{"normal", "exit 0", false},
		{"error", "exit 3", false},
		{"cancelled", "trap '' TERM; while :; do sleep 1; done", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			tag := fmt.Sprintf("%07d", (time.Now().UnixNano()/1000+int64(os.Getpid()))%1e7)
			script := `setsid sleep 1` + tag + ` </dev/null >/dev/null 2>&1 &
( ( sleep 2` + tag + ` </dev/null >/dev/null 2>&1 & ) & )
( trap '' TERM HUP INT; exec sleep 3` + tag + ` ) </dev/null >/dev/null 2>&1 &
until [ "$(pgrep -c -f '^sleep [123]` + tag + `$')" = 3 ]; do sleep 0.05; done; echo started; ` + c.end
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			cmd, err := Spec{Env: baseEnv}.Command(ctx, []string{"bash", "-c", script})
			if err != nil {
				t.Fatal(err)
			}
			cmd.WaitDelay = 2 * time.Second
			stdout, _ := cmd.StdoutPipe()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			var started string
			fmt.Fscan(stdout, &started)
			// The script said "started" only once it saw the three inside.
			// Where it then ends at once (normal, error), the sandbox may
			// already be killing them: count them from outside only where
			// the script keeps running until cancelled, which shows that
			// sleepers sees the sandbox's processes at all.
			if n := len(sleepers(tag)); c.cancel && n != 3 {
				t.Errorf("%d of the 3 leftovers started (the test sees them outside)", n)
			}
			if c.cancel {
				cancel()
			}
			cmd.Wait()
			if left := sleepers(tag); len(left) > 0 {
				for _, p := range left {
					b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", p))
					t.Logf("%d: %s", p, b)
				}
				for _, p := range left {
					syscall.Kill(p, syscall.SIGKILL)
				}
				t.Errorf("outlived the sandbox: pids %v", left)
			}
		})
	}
}

// sleepers are the machine's processes `sleep NTAG`.
func sleepers(tag string) []int {
	var ps []int
	pids, _ := procfs.PIDs("")
	for _, p := range pids {
		if a, err := procfs.Cmdline(p); err == nil && len(a) == 2 && a[0] == "sleep" && len(a[1]) == len(tag)+1 && strings.HasSuffix(a[1], tag) {
			if st, _, err := procfs.ReadStat(p); err == nil && st.State() != 'Z' {
				ps = append(ps, p)
			}
		}
	}
	return ps
}

// TestTuneGrantAllowList: the tune grant writes the listed sysctls only:
// kernel.core_pattern, kernel.modprobe, binfmt_misc's register and
// net.core.bpf_jit_harden stay read-only inside (the test tries to write
// them their own current value, so a broken sandbox changes nothing).
func TestTuneGrantAllowList(t *testing.T) {
	for key, want := range map[string]bool{
		"net.core.somaxconn": true, "net/ipv4/tcp_fin_timeout": true, "fs.file-max": true, "fs.nr_open": true,
		"kernel.core_pattern": false, "kernel.modprobe": false, "fs.binfmt_misc.register": false,
		"net.core.bpf_jit_harden": false, "kernel.poweroff_cmd": false, "vm.overcommit_memory": false,
		"net..core": false, "": false,
	} {
		if got := TuneSysctlAllowed(key); got != want {
			t.Errorf("TuneSysctlAllowed(%q) = %v, want %v", key, got, want)
		}
	}
	needBwrap(t)
	alsoAsNobody(t)
	script := `for f in /proc/sys/kernel/core_pattern /proc/sys/kernel/modprobe /proc/sys/net/core/bpf_jit_harden /proc/sys/fs/binfmt_misc/status; do
  [ -e "$f" ] || continue
  v=$(cat "$f" 2>/dev/null) || continue
  if printf '%s\n' "$v" > "$f" 2>/dev/null; then echo "wrote $f"; fi
done
v=$(cat /proc/sys/net/core/somaxconn); printf '%s\n' "$v" > /proc/sys/net/core/somaxconn && echo "somaxconn ok"`
	for _, gs := range [][]Grant{{GrantTune}, {GrantTune, GrantHostNetwork}} {
		out, code := run(t, Spec{Grants: gs}, script)
		if strings.Contains(out, "wrote ") {
			t.Errorf("%v as uid %d: a sysctl outside the list was written:\n%s", gs, os.Geteuid(), out)
		}
		// As root the listed sysctl is writable; as a user none is (the
		// script then ends on the failed write).
		if os.Geteuid() == 0 && (code != 0 || !strings.Contains(out, "somaxconn ok")) {
			t.Errorf("%v: exit %d\n%s", gs, code, out)
		}
	}
}
