package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/benchflow/benchflow/engine/procfs"
)

// hostileStudy is a bundle a hostile publisher would write. Published
// (dest does not exist) its exec step does nothing; reproduced with
// --var dest=OUT it records its environment and its standard input into
// OUT, leaves a setsid daemon, a double-forked sleep and a loop that
// ignores SIGTERM, re-points OUT/latest at an earlier run of the
// reader's and drops extra.txt into every run folder, then waits var.hold
// seconds.
const hostileStudy = `
pipeline "hostile" {
  repetitions = 1
}
variable "dest" { default = "/nonexistent-benchflow-dest" }
variable "tag" { default = "0" }
variable "hold" { default = "0" }
service "web" {
  command = [benchflow.bin, "serve", "--addr", "127.0.0.1:${self.port.http}"]
  port "http" {}
  health { http = "/" }
}
step "exec" "hostile" {
  command = ["sh", "-c", <<-EOT
    D=${var.dest}
    [ -d "$D" ] || exit 0
    env > "$D/env.txt"
    readlink /proc/self/fd/0 > "$D/stdin.txt"
    setsid sleep 1${var.tag} </dev/null >/dev/null 2>&1 &
    ( ( sleep 2${var.tag} </dev/null >/dev/null 2>&1 & ) & )
    ( trap '' TERM HUP INT
      while :; do
        ln -sfn 20200101T000000Z-dead "$D/latest" 2>/dev/null
        for r in "$D"/2*/; do
          case "$r" in *20200101T000000Z-dead/) ;; *) echo dropped > "$r/extra.txt" ;; esac
        done
        sleep 0.05
      done
    ) </dev/null >/dev/null 2>&1 &
    sleep ${var.hold}
    exit 0
  EOT
  ]
}
step "load" "main" {
  target      = "${service.web.url}/"
  connections = 1
  threads     = 1
  requests    = 20
}
claim "serves" {
  metric = "requests"
  value  = "> 1"
}
`

// hostileTag is a number no other process's command line holds.
func hostileTag() string {
	return fmt.Sprintf("%07d", (time.Now().UnixNano()/1000+int64(os.Getpid()))%1e7)
}

// leftovers are the machine's processes `sleep NTAG` (N 1 or 2).
func leftovers(tag string) []int {
	var ps []int
	pids, _ := procfs.PIDs("")
	for _, p := range pids {
		a, err := procfs.Cmdline(p)
		if err != nil || len(a) != 2 || a[0] != "sleep" || len(a[1]) != len(tag)+1 || !strings.HasSuffix(a[1], tag) {
			continue
		}
		if st, _, err := procfs.ReadStat(p); err == nil && st.State() != 'Z' {
			ps = append(ps, p)
		}
	}
	return ps
}

func killAll(ps []int) {
	for _, p := range ps {
		syscall.Kill(p, syscall.SIGKILL)
	}
}

// TestReproduceHostile: what a hostile bundle does inside reaches nothing
// of the reader's: no secret of the environment (each of the parent's
// variables checked), no terminal (standard input is /dev/null), nothing
// left running, latest re-pointed at the reader's earlier run is not what
// is judged (nor written into), and what it dropped into its run folder
// is not published.
func TestReproduceHostile(t *testing.T) {
	b := publishStudy(t, hostileStudy)
	work := t.TempDir()
	out := filepath.Join(work, "again")
	earlier := filepath.Join(out, "20200101T000000Z-dead")
	if err := os.MkdirAll(earlier, 0o755); err != nil {
		t.Fatal(err)
	}
	mb, _ := os.ReadFile(filepath.Join(b, "manifest.json"))
	os.WriteFile(filepath.Join(earlier, "manifest.json"), mb, 0o644)
	tag := hostileTag()
	t.Cleanup(func() { killAll(leftovers(tag)) })

	cmd := exec.Command(bin, "reproduce", b, "--yes", "--out", out, "-q",
		"--var", "dest="+out, "--var", "tag="+tag)
	cmd.Dir = work
	secrets := map[string]string{
		"BENCHFLOW_AGENT_TOKEN":      "agent-secret",
		"BENCHFLOW_AGENT_TOKEN_FILE": "/etc/benchflow-token",
		"AWS_SECRET_ACCESS_KEY":      "aws-secret",
		"GITHUB_TOKEN":               "gh-secret",
		"SSH_AUTH_SOCK":              "/tmp/ssh-agent.sock",
		"BENCHFLOW_TEST_NOMAD_TOKEN": "nomad-secret",
		"NOMAD_TOKEN":                "nomad-secret",
		"DOCKER_HOST":                "unix:///run/docker.sock",
	}
	env := []string{"HOME=" + t.TempDir(), "TZ=UTC", "LANG=C.UTF-8", "LC_ALL=C", "BENCHFLOW_LOAD_ENGINE=epoll"}
	for k, v := range secrets {
		env = append(env, k+"="+v)
	}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := secrets[k]; !ok && k != "HOME" && k != "TZ" && k != "LANG" && k != "LC_ALL" && k != "BENCHFLOW_LOAD_ENGINE" {
			env = append(env, kv)
		}
	}
	cmd.Env = env
	o, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("reproduce: %v\n%s", err, o)
	}

	// Nothing outlives reproduce.
	if left := leftovers(tag); len(left) > 0 {
		t.Errorf("processes the bundle started outlived reproduce: %v", left)
	}
	// No terminal, not even a pipe of the reader's: standard input is
	// /dev/null.
	if b, _ := os.ReadFile(filepath.Join(out, "stdin.txt")); strings.TrimSpace(string(b)) != "/dev/null" {
		t.Errorf("the bundle's standard input was %q, want /dev/null", b)
	}
	// The environment: each of the parent's variables is in by the
	// allow-list, or out.
	eb, err := os.ReadFile(filepath.Join(out, "env.txt"))
	if err != nil {
		t.Fatalf("the exec step did not run: %v\n%s", err, o)
	}
	inside := map[string]string{}
	for _, l := range strings.Split(string(eb), "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			inside[k] = v
		}
	}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		got, in := inside[k]
		switch k {
		case "PATH", "TZ", "LANG", "LC_ALL", "BENCHFLOW_LOAD_ENGINE", "USER", "LOGNAME", "NO_COLOR", "LANGUAGE":
			if !in || got != v {
				t.Errorf("%s inside = %q (set: %v), want %q", k, got, in, v)
			}
		case "HOME":
			if got != "/tmp" {
				t.Errorf("HOME inside = %q, want the private /tmp", got)
			}
		case "PWD", "OLDPWD", "SHLVL", "_":
			// set by the shell inside
		default:
			if strings.HasPrefix(k, "LC_") {
				continue
			}
			if in {
				t.Errorf("the parent's %s reached the sandbox (%q)", k, got)
			}
		}
	}
	for k, v := range secrets {
		if strings.Contains(string(eb), v) {
			t.Errorf("the value of %s reached the sandbox", k)
		}
	}

	// The run judged is the new one, not what latest was moved to.
	runs, _ := filepath.Glob(filepath.Join(out, "2026*"))
	var fresh string
	for _, r := range runs {
		if !strings.HasSuffix(r, "20200101T000000Z-dead") {
			fresh = r
		}
	}
	if fresh == "" {
		t.Fatalf("no new run in %s: %v\n%s", out, runs, o)
	}
	if _, err := os.Stat(filepath.Join(earlier, "reproduction.json")); err == nil {
		t.Error("the verdict was written into the reader's earlier run (latest moved by the sandbox)")
	}
	if _, err := os.Stat(filepath.Join(fresh, "reproduction.json")); err != nil {
		t.Errorf("the new run has no verdict: %v", err)
	}
	if l, _ := os.Readlink(filepath.Join(out, "latest")); l != filepath.Base(fresh) {
		t.Errorf("latest -> %q after reproduce, want the new run %s", l, filepath.Base(fresh))
	}
	if !strings.Contains(string(o), "run "+filepath.Base(fresh)) {
		t.Errorf("the verdict does not name the new run %s:\n%s", filepath.Base(fresh), o)
	}

	// What the sandbox dropped into its run folder is not published.
	if _, err := os.Stat(filepath.Join(fresh, "extra.txt")); err != nil {
		t.Fatalf("the test proves nothing: no extra.txt in the run (%v)", err)
	}
	po, err := runHome(t, work, t.TempDir(), "publish", fresh, "bundle2")
	if err != nil {
		t.Fatalf("publish: %v\n%s", err, po)
	}
	if _, err := os.Stat(filepath.Join(work, "bundle2", "extra.txt")); err == nil {
		t.Error("publish carried extra.txt, a file the run did not write")
	}
	if !strings.Contains(po, "left out (not files a run writes): extra.txt") {
		t.Errorf("publish does not say it left extra.txt out:\n%s", po)
	}
	if _, err := os.Stat(filepath.Join(work, "bundle2", "reproduction.json")); err != nil {
		t.Errorf("publish left out the verdict: %v", err)
	}
}

// TestReproduceKilledLeavesNothing: SIGKILL (nothing of reproduce runs
// after it) or SIGINT of reproduce while the bundle's daemons run: they
// are gone.
func TestReproduceKilledLeavesNothing(t *testing.T) {
	b := publishStudy(t, hostileStudy)
	for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			work := t.TempDir()
			out := filepath.Join(work, "again")
			os.MkdirAll(out, 0o755)
			tag := hostileTag()
			t.Cleanup(func() { killAll(leftovers(tag)) })
			cmd := exec.Command(bin, "reproduce", b, "--yes", "--out", out, "-q",
				"--var", "dest="+out, "--var", "tag="+tag, "--var", "hold=120")
			cmd.Dir, cmd.Env = work, append(os.Environ(), "HOME="+t.TempDir())
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
			for i := 0; len(leftovers(tag)) < 2; i++ {
				if i == 6000 {
					t.Fatal("the bundle's daemons never started")
				}
				time.Sleep(20 * time.Millisecond)
			}
			cmd.Process.Signal(sig)
			done := make(chan struct{})
			go func() { cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(2 * time.Minute):
				t.Fatalf("reproduce did not end within 2 minutes of %v", sig)
			}
			for i := 0; len(leftovers(tag)) > 0; i++ {
				if i == 3000 {
					t.Fatalf("after %v of reproduce, the bundle's processes %v still run a minute later", sig, leftovers(tag))
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
}
