package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/benchflow/benchflow/providers/ssh/sshtest"
)

// sshFaults is nginx on an SSH host with knobs for the fault tests: a
// command run before nginx starts (PRE), the warm-up's duration, the host
// folder (dir), the login user and sudo, and a second service that
// ignores SIGTERM, touching var.mark when it gets one (teardown then
// waits stop_timeout for it).
const sshFaults = `
pipeline "ssh-faults" {
  repetitions = 1
}
variable "address" { type = string }
variable "identity" { type = string }
variable "known_hosts" { type = string }
variable "user" {
  type    = string
  default = "root"
}
variable "sudo" {
  type    = bool
  default = false
}
variable "dir" {
  type    = string
  default = "/tmp"
}
variable "pre" {
  type    = string
  default = ":"
}
variable "warm" {
  type    = string
  default = "500ms"
}
variable "stop" {
  type    = string
  default = "2s"
}
variable "mark" {
  type    = string
  default = "/nonexistent/mark"
}
provider "ssh" "server" {
  address       = var.address
  user          = var.user
  identity_file = var.identity
  known_hosts   = var.known_hosts
  sudo          = var.sudo
  dir           = var.dir
  stop_timeout  = var.stop
}
service "nginx" {
  provider = "server"
  command  = ["/bin/sh", "-c", "${var.pre}; exec /usr/sbin/nginx -p \"$0\" -c \"$0/nginx.conf\" -g 'daemon off;' -e stderr", self.dir]
  file "nginx.conf" {
    content = <<-EOT
      worker_processes 1;
      pid ${self.dir}/nginx.pid;
      error_log stderr;
      events { worker_connections 64; }
      http {
        access_log off;
        client_body_temp_path ${self.dir}/body;
        proxy_temp_path ${self.dir}/proxy;
        fastcgi_temp_path ${self.dir}/fastcgi;
        uwsgi_temp_path ${self.dir}/uwsgi;
        scgi_temp_path ${self.dir}/scgi;
        server {
          listen ${var.address}:${self.port.http};
          root ${self.dir};
          location / { try_files /hello =404; }
        }
      }
    EOT
  }
  file "hello" {
    content = "hello\n"
  }
  port "http" {}
  health {
    http = "/"
  }
}
service "stubborn" {
  provider = "server"
  command  = ["/bin/sh", "-c", "trap 'touch \"$0\"' TERM; while true; do sleep 0.1; done", var.mark]
}
step "warm" "w" {
  target      = "${service.nginx.url}/"
  connections = 2
  threads     = 1
  duration    = var.warm
}
step "load" "main" {
  target      = "${service.nginx.url}/"
  connections = 2
  threads     = 1
  duration    = "500ms"
  requests    = 100000
}
`

// faultsPipeline writes sshFaults and makes sure the copy of benchflow it
// puts on the host is removed afterwards.
func faultsPipeline(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "ssh-faults.hcl")
	if err := os.WriteFile(p, []byte(sshFaults), 0o644); err != nil {
		t.Fatal(err)
	}
	sshtest.ForgetBinary(t, bin)
	return p
}

// hostCmdline reports whether a process whose command line contains s
// runs on the host.
func hostCmdline(t *testing.T, h *sshtest.Host, s string) bool {
	for _, p := range h.Pids(t) {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(p) + "/cmdline")
		if strings.Contains(strings.ReplaceAll(string(b), "\x00", " "), s) {
			return true
		}
	}
	return false
}

// binaryCacheDir is where the hosts keep this build of benchflow (root's
// ~/.cache/benchflow/bin/<sha256>: the hosts share this machine's files).
func binaryCacheDir(t *testing.T, home string) string {
	t.Helper()
	f, err := os.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := sha256.New()
	io.Copy(s, f)
	return filepath.Join(home, ".cache", "benchflow", "bin", hex.EncodeToString(s.Sum(nil)))
}

// interruptWhen starts apply, waits until ready says the phase is under
// way (polling, up to 2 minutes), sends SIGINT and returns apply's error
// and output.
func interruptWhen(t *testing.T, args []string, ready func() bool) (error, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "BENCHFLOW_STATE_DIR="+t.TempDir())
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for i := 0; ; i++ {
		select {
		case err := <-done:
			t.Fatalf("apply ended before the phase: %v\n%s", err, buf.String())
		default:
		}
		if ready() {
			break
		}
		if i > 12000 {
			cmd.Process.Kill()
			<-done
			t.Fatalf("the phase never came:\n%s", buf.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGINT)
	err := <-done
	return err, buf.String()
}

// runIDOf reads the run id from apply's results folder.
func runIDOf(out string) string {
	var m manifest
	if b, err := os.ReadFile(filepath.Join(out, "latest", "manifest.json")); err == nil {
		json.Unmarshal(b, &m)
	}
	return m.RunID
}

// TestSSHInterruptedAtEachPhase sends Ctrl-C (SIGINT to the real binary)
// while benchflow copies itself to the host (the link shaped to 100
// Mbit/s so the copy lasts), while a service is being provisioned (its
// command still sleeping before nginx starts), during the warm-up, and
// during teardown (waiting for a service that ignores SIGTERM). The load
// itself is TestSSHInterrupted's. Each time apply fails or stops, and
// nothing is left on the host: no process, no run folder, no partial copy
// of the binary.
func TestSSHInterruptedAtEachPhase(t *testing.T) {
	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	for _, phase := range []string{"copy", "provision", "warm", "teardown"} {
		t.Run(phase, func(t *testing.T) {
			h := sshtest.Start(t, 1)[0]
			p := faultsPipeline(t)
			out := t.TempDir()
			mark := filepath.Join(t.TempDir(), "term")
			args := append([]string{"apply", p, "--out", out, "--var", "mark=" + mark}, hostVars(h)...)
			cache := binaryCacheDir(t, home)
			var ready func() bool
			switch phase {
			case "copy":
				if _, err := os.Stat(cache); err == nil {
					t.Skipf("%s exists already (another run's copy): the copy would not happen", cache)
				}
				h.Shape(t, 100_000_000)
				ready = func() bool {
					ms, _ := filepath.Glob(filepath.Join(cache, "benchflow.tmp-*"))
					return len(ms) > 0
				}
			case "provision":
				args = append(args, "--var", "pre=sleep 3600")
				ready = func() bool { return hostCmdline(t, h, "sleep 3600") }
			case "warm":
				args = append(args, "--var", "warm=300s")
				ready = func() bool { // nginx up and the warm-up's connections open
					if !hasComm(t, h, "nginx") {
						return false
					}
					o, _ := exec.Command("ip", "netns", "exec", h.NS, "ss", "-Htn", "state", "established").Output()
					for _, l := range strings.Split(string(o), "\n") {
						if f := strings.Fields(l); len(f) >= 3 && !strings.HasSuffix(f[2], ":22") {
							return true
						}
					}
					return false
				}
			case "teardown":
				args = append(args, "--var", "stop=10s")
				ready = func() bool { _, err := os.Stat(mark); return err == nil }
			}
			err, output := interruptWhen(t, args, ready)
			t.Logf("apply: %v\n%s", err, output)
			if err == nil && phase != "teardown" {
				t.Errorf("apply interrupted during %s exited 0", phase)
			}
			h.WaitEmpty(t)
			if id := runIDOf(out); id != "" {
				if left := runFoldersOf(t, id); len(left) > 0 {
					t.Errorf("run folders left on the host: %v", left)
				}
			} else if ms, _ := filepath.Glob(filepath.Join(os.TempDir(), "benchflow-run-*")); phase != "copy" && len(ms) > 0 {
				t.Logf("no run id to check the run folders against (%d run folders of other runs)", len(ms))
			}
			if ms, _ := filepath.Glob(filepath.Join(cache, "benchflow.tmp-*")); len(ms) > 0 {
				t.Errorf("a partial copy of benchflow is left on the host: %v", ms)
			}
		})
	}
}

// TestSSHFullDisk runs the services in a folder on a full file system (a
// small tmpfs, filled first): apply fails with the reason, naming the
// service and the host, and nothing is left there.
func TestSSHFullDisk(t *testing.T) {
	h := sshtest.Start(t, 1)[0]
	p := faultsPipeline(t)
	// The host's files are this machine's, seen through the mount
	// namespace sshd runs in (ip netns exec made it): the tmpfs is
	// mounted there, where the host's sessions see it.
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	inHost := func(argv ...string) ([]byte, error) {
		return exec.Command("nsenter", append([]string{"-t", strconv.Itoa(h.SSHDPid), "-m", "--"}, argv...)...).CombinedOutput()
	}
	if out, err := inHost("mount", "-t", "tmpfs", "-o", "size=64k", "benchflow-full", dir); err != nil {
		t.Skipf("cannot mount a tmpfs on the host: %v: %s", err, out)
	}
	t.Cleanup(func() { inHost("umount", dir) }) // or it goes with the host
	if out, _ := inHost("dd", "if=/dev/zero", "of="+dir+"/filler", "bs=4k"); !bytes.Contains(out, []byte("No space left")) {
		t.Fatalf("filling the tmpfs: %s", out)
	}
	out := t.TempDir()
	cmd := exec.Command(bin, append([]string{"apply", p, "-v", "--out", out, "--var", "dir=" + dir}, hostVars(h)...)...)
	cmd.Env = append(os.Environ(), "BENCHFLOW_STATE_DIR="+t.TempDir())
	b, err := cmd.CombinedOutput()
	t.Logf("apply: %v\n%s", err, b)
	if err == nil {
		t.Fatal("apply on a full disk exited 0")
	}
	m := readManifest(t, filepath.Join(out, "latest"))
	if len(m.Trials) != 1 || m.Trials[0].Status != "failed" {
		t.Fatalf("trials: %+v", m.Trials)
	}
	if e := m.Trials[0].Error; !strings.Contains(e, "no space left on device") || !strings.Contains(e, h.Addr) {
		t.Errorf("the trial's error does not say the host's disk is full, naming the host: %s", e)
	}
	h.WaitEmpty(t)
	if out, err := inHost("ls", "-A", dir); err != nil || strings.TrimSpace(string(out)) != "filler" {
		t.Errorf("left in the full folder on the host: %v: %s", err, out)
	}
}

// TestSSHSudo logs in as an unprivileged user with passwordless sudo and
// sets sudo = true: the services run as root (the command records its
// uid), and nothing is left on the host afterwards.
func TestSSHSudo(t *testing.T) {
	sshtest.Require(t)
	if _, err := exec.LookPath("sudo"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("sudo is not installed (.ci/run installs it)")
		}
		t.Skip("sudo is not installed (Debian: sudo)")
	}
	user := "bfsudo" + strconv.Itoa(os.Getpid()%100000)
	// -p '*': no password, but not a locked account ('!'), which sshd
	// without PAM refuses.
	if out, err := exec.Command("useradd", "-m", "-s", "/bin/sh", "-p", "*", user).CombinedOutput(); err != nil {
		t.Fatalf("useradd %s: %v: %s", user, err, out)
	}
	sudoers := "/etc/sudoers.d/" + user
	t.Cleanup(func() {
		os.Remove(sudoers)
		if out, err := exec.Command("userdel", "-r", user).CombinedOutput(); err != nil {
			t.Errorf("userdel -r %s: %v: %s", user, err, out)
		}
	})
	if err := os.WriteFile(sudoers, []byte(user+" ALL=(ALL) NOPASSWD: ALL\n"), 0o440); err != nil {
		t.Fatal(err)
	}
	home := "/home/" + user
	h := sshtest.StartWith(t, 1, sshtest.Options{SSHDConfig: []string{
		"Match User " + user, "AuthorizedKeysFile " + home + "/.ssh/authorized_keys"}})[0]
	// The test key, authorized for the user (sshd reads the file as the user).
	pub, err := exec.Command("ssh-keygen", "-y", "-f", h.IdentityFile).Output()
	if err != nil {
		t.Fatalf("ssh-keygen -y: %v", err)
	}
	os.MkdirAll(home+"/.ssh", 0o700)
	os.WriteFile(home+"/.ssh/authorized_keys", pub, 0o600)
	exec.Command("chown", "-R", user+":", home+"/.ssh").Run()

	p := faultsPipeline(t)
	// A folder any user can write to (t.TempDir's parent is root's
	// alone): without sudo the user's uid would land there.
	ud, err := os.MkdirTemp("", "bfsudo-uid-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(ud) })
	os.Chmod(ud, 0o777)
	uid := filepath.Join(ud, "uid")
	out := t.TempDir()
	cmd := exec.Command(bin, append([]string{"apply", p, "--out", out, "--var", "user=" + user, "--var", "sudo=true",
		"--var", "pre=id -u > " + uid}, hostVars(h)...)...)
	cmd.Env = append(os.Environ(), "BENCHFLOW_STATE_DIR="+t.TempDir())
	b, err := cmd.CombinedOutput()
	t.Logf("apply: %v\n%s", err, b)
	if err != nil {
		m := readManifest(t, filepath.Join(out, "latest"))
		t.Fatalf("apply with sudo = true: %v: %+v", err, m.Trials)
	}
	if got, _ := os.ReadFile(uid); strings.TrimSpace(string(got)) != "0" {
		t.Errorf("the service ran as uid %q, want 0 (root, through sudo)", got)
	}
	log, _ := os.ReadFile(filepath.Join(h.Dir, "sshd.log"))
	if !strings.Contains(string(log), "Accepted publickey for "+user) {
		t.Errorf("benchflow did not log in as %s:\n%s", user, log)
	}
	h.WaitEmpty(t)
	if left := runFoldersOf(t, runIDOf(out)); len(left) > 0 {
		t.Errorf("run folders left on the host: %v", left)
	}
}
