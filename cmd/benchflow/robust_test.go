package main

// Robustness tests of the real binary: bad flags on every command, a full
// disk, dead and misbehaving servers, broken templates, services that die or
// never become healthy, and a double Ctrl-C. Each checks the exit status, that
// the message names the problem, that nothing crashed, and that nothing was
// left running or half-written.

import (
	"bufio"
	"bytes"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// robustRun runs the binary with args in dir (or the package directory when
// dir is ""), bounded by limit, and returns stdout, stderr and the exit code.
// It fails the test on a Go panic or stack trace and when the command does
// not end within limit (a hang, not a slow run).
func robustRun(t *testing.T, dir string, limit time.Duration, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(limit):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("benchflow %v did not end within %v\nstdout:\n%s\nstderr:\n%s", args, limit, stdout.String(), stderr.String())
	}
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	robustNoCrash(t, args, stdout.String()+stderr.String())
	return stdout.String(), stderr.String(), code
}

func robustNoCrash(t *testing.T, args []string, out string) {
	t.Helper()
	if strings.Contains(out, "panic:") || strings.Contains(out, "goroutine ") {
		t.Fatalf("benchflow %v crashed:\n%s", args, out)
	}
}

// robustMarker returns a number no other process on the machine carries on
// its command line, used as the served body size so that servePIDs finds
// exactly the processes a test started.
func robustMarker() string {
	return fmt.Sprintf("%d", 100000+rand.IntN(800000))
}

// robustWrite writes files (name → content) into a new temp dir and returns it.
func robustWrite(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// robustNoneLeft fails when a process with marker on its command line is
// still alive; it gives a process that is being reaped a moment to go.
func robustNoneLeft(t *testing.T, marker string) {
	t.Helper()
	var left []int
	for i := 0; i < 20; i++ {
		if left = servePIDs(marker); len(left) == 0 {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, pid := range left {
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		t.Errorf("process %d left running: %s", pid, bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}))
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// robustNoTempDirs fails when a service folder of runID is left in $TMPDIR.
func robustNoTempDirs(t *testing.T, runID string) {
	t.Helper()
	if runID == "" {
		return
	}
	left, _ := filepath.Glob(filepath.Join(os.TempDir(), "benchflow-"+runID+"-*"))
	for _, l := range left {
		t.Errorf("service folder left behind: %s", l)
		_ = os.RemoveAll(l)
	}
}

// TestRobustBadFlags runs every command with wrong flags, values and
// arguments: each must exit non-zero with a message naming the problem.
// Usage errors exit 1 (cobra's own: unknown flag, bad value, argument count)
// except where the command returns exit status 2 itself (--var without "=",
// --quiet with --verbose).
func TestRobustBadFlags(t *testing.T) {
	dir := robustWrite(t, map[string]string{
		"ok.hcl": `pipeline "ok" {}
service "web" {
  command = [benchflow.bin, "serve", "--addr", "127.0.0.1:${self.port.http}"]
  port "http" {}
}
step "load" "main" {
  target   = service.web.url
  requests = 10
}
`,
		"notes.txt": "not a results directory\n",
	})
	ok := filepath.Join(dir, "ok.hcl")
	missing := filepath.Join(dir, "missing.hcl")
	noRun := filepath.Join(dir, "no-such-run")
	url := "http://127.0.0.1:1/"
	cases := []struct {
		args []string
		code int
		want string
		bug  string // non-empty: a known bug, the case is skipped
	}{
		// validate, plan, apply and render share the pipeline flags.
		{[]string{"validate", "--bogus", ok}, 1, "unknown flag: --bogus", ""},
		{[]string{"validate"}, 1, "accepts 1 arg(s), received 0", ""},
		{[]string{"validate", ok, ok}, 1, "accepts 1 arg(s), received 2", ""},
		{[]string{"validate", missing}, 1, "missing.hcl: no such file or directory", ""},
		{[]string{"validate", dir}, 1, "", ""},
		{[]string{"validate", "--var", "novalue", ok}, 1, `--var "novalue": expected name=value`, ""},
		{[]string{"validate", "--var", "=1", ok}, 1, `--var "=1": expected name=value`, ""},
		{[]string{"validate", "--var", "nosuch=1", ok}, 1, "Undeclared variable", ""},
		{[]string{"validate", "--var-file", filepath.Join(dir, "nofile.vars"), ok}, 1, "nofile.vars: no such file or directory", ""},
		{[]string{"validate", "--repetitions", "x", ok}, 1, `invalid argument "x" for "--repetitions"`, ""},
		{[]string{"validate", "--repetitions", "-1", ok}, 1, "--repetitions -1: must be between 1 and 10000", ""},
		{[]string{"validate", "--repetitions", "99999999999", ok}, 1, "--repetitions 99999999999: must be between 1 and 10000", ""},
		{[]string{"validate", "--max-trials", "0", ok}, 1, "--max-trials 0: must be at least 1", ""},
		{[]string{"plan", "--bogus", ok}, 1, "unknown flag: --bogus", ""},
		{[]string{"plan"}, 1, "accepts 1 arg(s), received 0", ""},
		{[]string{"plan", missing}, 1, "no such file or directory", ""},
		{[]string{"plan", "--seed", "abc", ok}, 1, `invalid argument "abc" for "--seed"`, ""},
		{[]string{"plan", "--var", "novalue", ok}, 1, "expected name=value", ""},
		{[]string{"apply", "--bogus", ok}, 1, "unknown flag: --bogus", ""},
		{[]string{"apply"}, 1, "accepts 1 arg(s), received 0", ""},
		{[]string{"apply", "--out", filepath.Join(dir, "r"), missing}, 1, "no such file or directory", ""},
		{[]string{"apply", "--out", filepath.Join(dir, "r"), "--var", "novalue", ok}, 1, "expected name=value", ""},
		{[]string{"apply", "--out", filepath.Join(dir, "r"), "-q", "-v", ok}, 1, "--quiet and --verbose cannot be used together", ""},
		{[]string{"apply", "--out", filepath.Join(dir, "r"), "--resume", noRun, ok}, 1, "no such file or directory", ""},
		{[]string{"apply", "--out", filepath.Join(dir, "notes.txt"), ok}, 1, "notes.txt", ""},
		{[]string{"render", "--bogus", ok}, 1, "unknown flag: --bogus", ""},
		{[]string{"render"}, 1, "accepts 1 arg(s), received 0", ""},
		{[]string{"render", missing}, 1, "no such file or directory", ""},
		{[]string{"render", "--trial", "nope", ok}, 1, `no trial "nope"`, ""},
		// load: wrk's flags.
		{[]string{"load", "--bogus", url}, 1, "unknown flag: --bogus", ""},
		{[]string{"load"}, 1, "at least one URL", ""},
		{[]string{"load", "-c", "-1", url}, 1, "-c/--connections -1: must be at least 1", ""},
		{[]string{"load", "-t", "0", url}, 1, "-t/--threads 0: must be at least 1", ""},
		{[]string{"load", "-d", "banana", url}, 1, `-d/--duration: "banana"`, ""},
		{[]string{"load", "-d", "-5s", url}, 1, "must not be negative", ""},
		{[]string{"load", "-n", "x", url}, 1, `invalid argument "x" for "-n, --requests"`, ""},
		{[]string{"load", "-n", "-3", url}, 1, "-n/--requests -3", ""},
		{[]string{"load", "--timeout", "-1s", url}, 1, "--timeout", ""},
		{[]string{"load", "-H", "nocolon", url}, 1, `-H "nocolon"`, ""},
		{[]string{"load", "--body-file", filepath.Join(dir, "nobody"), url}, 1, "--body-file", ""},
		{[]string{"load", "-s", filepath.Join(dir, "none.star"), url}, 1, "-s/--script", ""},
		{[]string{"load", "--out", filepath.Join(dir, "no", "such", "dir", "r.parquet"), "-n", "1", url}, 1, "", ""},
		{[]string{"load", "not-a-url"}, 1, `"not-a-url" has no scheme`, ""},
		{[]string{"load", "http://"}, 1, "has no host", ""},
		{[]string{"load", "ftp://127.0.0.1/"}, 1, "unsupported scheme", ""},
		// serve.
		{[]string{"serve", "--bogus"}, 1, "unknown flag: --bogus", ""},
		{[]string{"serve", "--size", "1zz"}, 1, `--size: "1zz" has an unknown unit "zz"`, ""},
		{[]string{"serve", "--size", "-1"}, 1, "--size", ""},
		{[]string{"serve", "--delay", "x"}, 1, `invalid argument "x" for "--delay"`, ""},
		{[]string{"serve", "--status", "99"}, 1, "status 99", ""},
		{[]string{"serve", "--addr", "nope"}, 1, "missing port in address", ""},
		{[]string{"serve", "--addr", "127.0.0.1:99999"}, 1, "99999", ""},
		{[]string{"serve", "--dir", filepath.Join(dir, "www")}, 1, "www: no such file or directory", ""},
		{[]string{"serve", "extra"}, 1, `unknown command "extra"`, ""},
		// report and compare.
		{[]string{"report", "--bogus", noRun}, 1, "unknown flag: --bogus", ""},
		{[]string{"report"}, 1, "accepts 1 arg(s), received 0", ""},
		{[]string{"report", noRun}, 1, "no such file or directory", ""},
		{[]string{"report", dir}, 1, "manifest.json", ""},
		{[]string{"report", "--format", "xml", dir}, 1, `unknown --format "xml"`, ""},
		{[]string{"report", "--top", "x", dir}, 1, `invalid argument "x" for "--top"`, ""},
		{[]string{"compare", "--bogus", noRun, noRun}, 1, "unknown flag: --bogus", ""},
		{[]string{"compare", noRun}, 1, "accepts 2 arg(s), received 1", ""},
		{[]string{"compare", noRun, noRun}, 1, "no such file or directory", ""},
		{[]string{"compare", "--format", "xml", dir, dir}, 1, `unknown --format "xml"`, ""},
		{[]string{"compare", "--fail-above", "abc", dir, dir}, 1, `invalid --fail-above: "abc"`, ""},
		// gc.
		{[]string{"gc", "--bogus"}, 1, "unknown flag: --bogus", ""},
		{[]string{"gc", "extra"}, 1, "reading pipeline: stat extra: no such file", ""},
		{[]string{"gc", "--timeout", "banana"}, 1, `invalid argument "banana" for "--timeout"`, ""},
		{[]string{"gc", "--timeout", "-1s"}, 1, "--timeout -1s: must be positive", ""},
		// the root command.
		{[]string{"nosuchcommand"}, 1, `unknown command "nosuchcommand"`, ""},
		{[]string{"--bogus"}, 1, "unknown flag: --bogus", ""},
	}
	for _, tc := range cases {
		t.Run(strings.ReplaceAll(strings.Join(tc.args, " "), dir, "DIR"), func(t *testing.T) {
			if tc.bug != "" {
				t.Skip("known bug: " + tc.bug)
			}
			stdout, stderr, code := robustRun(t, dir, 30*time.Second, tc.args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, stdout, stderr)
			}
			if !strings.Contains(stderr, tc.want) {
				t.Errorf("stderr does not mention %q:\n%s", tc.want, stderr)
			}
			if strings.TrimSpace(stderr) == "" {
				t.Error("failed without a message on stderr")
			}
		})
	}
	// Nothing of the above may have created a results directory or started
	// a run: every apply case failed before running.
	if _, err := os.Stat(filepath.Join(dir, "r")); err == nil {
		t.Errorf("a failed apply created %s", filepath.Join(dir, "r"))
	}
	if _, err := os.Stat(filepath.Join(dir, "results")); err == nil {
		t.Errorf("a failed apply created %s", filepath.Join(dir, "results"))
	}
}

// TestRobustFullDisk runs apply into a 300 KiB tmpfs that the results
// outgrow: the run must say "no space left on device", exit 1, leave no
// process and no temp file, and every file it left must parse.
func TestRobustFullDisk(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=300k", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs (%v): %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
			t.Errorf("unmounting %s: %v: %s", mnt, err, out)
		}
	})
	// A filler leaves about 60 KiB for the results, so that the disk
	// fills up however well the tables compress.
	if err := os.WriteFile(filepath.Join(mnt, "filler"), make([]byte, 240<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	marker := robustMarker()
	// Eight one-second trials with a 10 ms timeseries interval (the
	// shortest a load accepts) write a few KB of timeseries each,
	// rewritten through a temporary file at every commit: the space runs
	// out within the first few trials.
	src := fmt.Sprintf(`
pipeline "full-disk" { order = "sequential" }
matrix { n = [1, 2, 3, 4, 5, 6, 7, 8] }
service "web" {
  command = [benchflow.bin, "serve", "--addr", "127.0.0.1:${self.port.http}", "--size", "%s"]
  port "http" {}
  health { http = "/" }
}
step "load" "main" {
  target      = service.web.url
  connections = 2
  threads     = 1
  duration    = "1s"
  requests    = 20000
  interval    = "10ms"
}
`, marker)
	dir := robustWrite(t, map[string]string{"p.hcl": src})
	out := filepath.Join(mnt, "results")
	stdout, stderr, code := robustRun(t, dir, 60*time.Second, "apply", "p.hcl", "--out", out)
	if code != 1 {
		t.Errorf("exit %d, want 1\n%s%s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "no space left on device") {
		t.Errorf("the output does not say the disk is full:\n%s", stderr)
	}
	// The trial whose commit failed is reported failed, not ok.
	if !regexp.MustCompile(`trial c\d+-r1 n=\d+: failed in [^\n]*\n\s+recording the trial:`).MatchString(stderr) {
		t.Errorf("the trial that could not be recorded is not reported as failed:\n%s", stderr)
	}
	robustNoneLeft(t, marker)

	var runID string
	var manifests []string
	err := filepath.Walk(mnt, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		name := fi.Name()
		switch {
		case strings.Contains(name, ".tmp"):
			t.Errorf("temporary file left behind: %s", p)
		case fi.IsDir() || fi.Mode()&os.ModeSymlink != 0:
		case name == "manifest.json":
			manifests = append(manifests, p)
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			var m manifest
			if err := json.Unmarshal(b, &m); err != nil {
				t.Errorf("%s does not parse (truncated?): %v", p, err)
			}
			runID = m.RunID
		case strings.HasSuffix(name, ".parquet"):
			duckCount(t, p) // fails the test when the file does not parse
		case fi.Size() == 0 && !strings.HasSuffix(name, ".log"):
			t.Errorf("empty file left behind: %s", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(manifests) != 1 {
		t.Errorf("found %d manifest.json files, want the run's one: %v", len(manifests), manifests)
	}
	robustNoTempDirs(t, runID)

	t.Run("files agree on the recorded trials", func(t *testing.T) {
		if len(manifests) != 1 {
			t.Skip("no manifest")
		}
		runDir := filepath.Dir(manifests[0])
		per := map[string]map[string]bool{}
		for _, f := range []string{"trials", "latency", "timeseries"} {
			per[f] = robustTrialIDs(t, filepath.Join(runDir, f+".parquet"))
		}
		m := readManifest(t, runDir)
		for _, tr := range m.Trials {
			in := []bool{per["trials"][tr.TrialID], per["latency"][tr.TrialID], per["timeseries"][tr.TrialID]}
			if in[0] != in[1] || in[1] != in[2] {
				t.Errorf("trial %s (manifest status %q) is in trials/latency/timeseries.parquet: %v; a trial is recorded in every file or in none", tr.TrialID, tr.Status, in)
			}
		}
	})

	t.Run("final error names the cause", func(t *testing.T) {
		last := stderr[strings.LastIndex(stderr, "Error:"):]
		if !strings.Contains(last, "no space left on device") && !strings.Contains(last, "recording") {
			t.Errorf("final error %q does not name the disk", last)
		}
	})
}

// robustServer listens on 127.0.0.1 and hands each accepted connection to
// handle; it accepts at most 10000 connections and closes everything at the
// end of the test.
func robustServer(t *testing.T, handle func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	done := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 10000; i++ {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				select {
				case <-done:
					c.Close()
				default:
					handle(c)
				}
			}()
		}
	}()
	t.Cleanup(func() {
		close(done)
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return "http://" + ln.Addr().String() + "/"
}

// readRequest reads until the end of an HTTP request head (or an error).
func readRequest(c net.Conn) error {
	r := bufio.NewReader(c)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return err
		}
		if line == "\r\n" || line == "\n" {
			return nil
		}
	}
}

// TestRobustLoadMisbehavingServers drives `benchflow load` at servers that
// refuse, hang up, talk garbage, cut the body short or never answer: each run
// must end (bounded by -n/-d and --timeout), exit 1 because no request
// succeeded, and name the error class in the summary and on stderr.
func TestRobustLoadMisbehavingServers(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String() + "/"
	ln.Close()
	cases := []struct {
		name   string
		url    func(t *testing.T) string
		class  string // error class in "Socket errors:" and on stderr
		detail string // words of the error sample
	}{
		{"connection refused", func(*testing.T) string { return closed }, "connect", "refused"},
		{"accepts and closes", func(t *testing.T) string {
			return robustServer(t, func(c net.Conn) { c.Close() })
		}, "read", ""},
		{"sends garbage", func(t *testing.T) string {
			return robustServer(t, func(c net.Conn) {
				defer c.Close()
				_ = readRequest(c)
				_, _ = c.Write([]byte("SSH-2.0-OpenSSH_9.2\r\n\x00\xff garbage garbage\r\n\r\n"))
			})
		}, "parse", ""},
		{"truncated body", func(t *testing.T) string {
			return robustServer(t, func(c net.Conn) {
				defer c.Close()
				_ = readRequest(c)
				_, _ = c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\nonly a few bytes"))
			})
		}, "read", ""},
		{"bad content-length", func(t *testing.T) string {
			return robustServer(t, func(c net.Conn) {
				defer c.Close()
				_ = readRequest(c)
				_, _ = c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: -5\r\n\r\nhello\n"))
			})
		}, "parse", ""},
		{"stalls in the headers", func(t *testing.T) string {
			return robustServer(t, func(c net.Conn) {
				defer c.Close()
				_ = readRequest(c)
				_, _ = c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Le"))
				_, _ = io.Copy(io.Discard, c)
			})
		}, "timeout", ""},
		{"never answers", func(t *testing.T) string {
			return robustServer(t, func(c net.Conn) {
				defer c.Close()
				_, _ = io.Copy(io.Discard, c) // reads the requests, answers nothing
			})
		}, "timeout", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			url := tc.url(t)
			args := []string{"load", "-c", "2", "-t", "1", "-n", "40", "-d", "1s", "--timeout", "200ms", url}
			stdout, stderr, code := robustRun(t, "", 30*time.Second, args...)
			if code != 1 {
				t.Errorf("exit %d, want 1 (no request succeeded)\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
			if !strings.Contains(stderr, "requests failed: "+tc.class) {
				t.Errorf("stderr does not name the %s errors:\n%s", tc.class, stderr)
			}
			if tc.detail != "" && !strings.Contains(stderr, tc.detail) {
				t.Errorf("stderr does not say %q:\n%s", tc.detail, stderr)
			}
			m := regexp.MustCompile(`Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+), parse (\d+)`).FindStringSubmatch(stdout)
			if m == nil {
				t.Fatalf("the summary has no Socket errors line:\n%s", stdout)
			}
			idx := map[string]int{"connect": 1, "read": 2, "write": 3, "timeout": 4, "parse": 5}[tc.class]
			if m[idx] == "0" {
				t.Errorf("the summary counts no %s errors: %q", tc.class, m[0])
			}
			if !strings.Contains(stdout, "Requests/sec:") {
				t.Errorf("the summary lacks Requests/sec:\n%s", stdout)
			}
			// The same run as JSON: one object, errors counted by class.
			jout, jerr, jcode := robustRun(t, "", 30*time.Second, append([]string{"load", "--json"}, args[1:]...)...)
			var j struct {
				Requests int64            `json:"requests"`
				Errors   int64            `json:"errors"`
				ErrorsBy map[string]int64 `json:"errors_by"`
			}
			if err := json.Unmarshal([]byte(jout), &j); err != nil {
				t.Fatalf("--json output does not parse: %v\n%s\n%s", err, jout, jerr)
			}
			if jcode != 1 || j.Errors == 0 {
				t.Errorf("--json: exit %d, %+v", jcode, j)
			}
			if j.ErrorsBy != nil && j.ErrorsBy[tc.class] == 0 {
				t.Errorf("--json errors_by %v has no %s errors", j.ErrorsBy, tc.class)
			}
		})
	}
}

// TestRobustTemplates: a file template with a syntax error, an unknown
// variable, or a file() of a missing path is reported by validate with a
// location, and apply on it starts nothing.
func TestRobustTemplates(t *testing.T) {
	pipeline := func(tmpl, marker string) string {
		return fmt.Sprintf(`pipeline "templates" {}
service "web" {
  command = [benchflow.bin, "serve", "--addr", "127.0.0.1:${self.port.http}", "--size", "%s"]
  file "site.conf" {
    template = file(%q)
    vars     = { workers = 2 }
  }
  port "http" {}
  health { http = "/" }
}
step "load" "main" {
  target   = service.web.url
  requests = 10
}
`, marker, tmpl)
	}
	cases := []struct {
		name string
		tmpl string // content of site.tmpl; "" leaves it missing
		want []string
	}{
		{"syntax error", "workers ${workers};\n%{ if workers > 1 }\nmany\n", []string{
			"p.hcl:4,3: Invalid file", `rendering file "site.conf"`, "missing its corresponding endif",
		}},
		{"unknown variable", "workers ${workers};\nuser ${nosuchvar};\n", []string{
			"p.hcl:4,3: Invalid file", "site.conf:2,", `no variable named "nosuchvar"`,
		}},
		{"bad expression", "workers ${workers +};\n", []string{
			"p.hcl:4,3: Invalid file", "site.conf:1,",
		}},
		{"missing file", "", []string{
			"p.hcl:5,16: Error in function call", "site.tmpl: no such file or directory", `file("site.tmpl")`,
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			marker := robustMarker()
			files := map[string]string{"p.hcl": pipeline("site.tmpl", marker)}
			if tc.tmpl != "" {
				files["site.tmpl"] = tc.tmpl
			}
			dir := robustWrite(t, files)
			_, stderr, code := robustRun(t, dir, 30*time.Second, "validate", "p.hcl")
			if code != 1 {
				t.Errorf("validate exit %d, want 1\n%s", code, stderr)
			}
			if !locRe.MatchString(stderr) {
				t.Errorf("validate's first line is not FILE:LINE,COL: Summary:\n%s", stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("validate output lacks %q:\n%s", w, stderr)
				}
			}
			_, astderr, acode := robustRun(t, dir, 30*time.Second, "apply", "p.hcl", "--out", "results")
			if acode != 1 {
				t.Errorf("apply exit %d, want 1\n%s", acode, astderr)
			}
			if !strings.Contains(astderr, tc.want[0]) {
				t.Errorf("apply output lacks %q:\n%s", tc.want[0], astderr)
			}
			runs, _ := filepath.Glob(filepath.Join(dir, "results", "*", "manifest.json"))
			for _, m := range runs {
				if mm := readManifest(t, filepath.Dir(m)); len(mm.Trials) > 0 {
					t.Errorf("apply of an invalid pipeline ran trials: %s", m)
				}
			}
			robustNoneLeft(t, marker)
		})
	}
}

// TestRobustServiceMisbehaviour: a service that dies in the middle of the
// load and one that never becomes healthy fail their trials with a clear
// error; the run goes on to a good trial, exits 1 and leaves nothing behind.
func TestRobustServiceMisbehaviour(t *testing.T) {
	marker := robustMarker()
	sleepArg := fmt.Sprintf("30.%s", marker) // never healthy: a sleep that listens on nothing
	src := fmt.Sprintf(`
pipeline "misbehaviour" { order = "sequential" }
matrix { mode = ["dies-mid-load", "never-healthy", "ok"] }
service "web" {
  command = (matrix.mode == "dies-mid-load" ?
    ["sh", "-c", "${benchflow.bin} serve --addr 127.0.0.1:${self.port.http} --size %[1]s & sleep 1; kill $!; wait"] :
    matrix.mode == "never-healthy" ? ["sleep", "%[2]s"] :
    [benchflow.bin, "serve", "--addr", "127.0.0.1:${self.port.http}", "--size", "%[1]s"])
  port "http" {}
  health {
    http    = "/"
    timeout = "1s"
  }
}
step "load" "main" {
  target      = service.web.url
  connections = 2
  threads     = 1
  duration    = "3s"
  timeout     = "200ms"
}
`, marker, sleepArg)
	dir := robustWrite(t, map[string]string{"p.hcl": src})
	stdout, stderr, code := robustRun(t, dir, 60*time.Second, "apply", "p.hcl", "--out", "results")
	if code != 1 {
		t.Errorf("exit %d, want 1\n%s%s", code, stdout, stderr)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "results", "latest", "manifest.json"))
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	var m struct {
		RunID  string `json:"run_id"`
		Status string `json:"status"`
		Trials []struct {
			TrialID string `json:"trial_id"`
			Status  string `json:"status"`
			Error   string `json:"error"`
		} `json:"trials"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	if m.Status != "failed" || len(m.Trials) != 3 {
		t.Fatalf("manifest: %+v\n%s", m, stderr)
	}
	if tr := m.Trials[1]; tr.Status != "failed" || !strings.Contains(tr.Error, "health") && !strings.Contains(tr.Error, "healthy") {
		t.Errorf("service never healthy: %+v; want the trial failed on the health check\n%s", tr, stderr)
	}
	if tr := m.Trials[2]; tr.Status != "ok" {
		t.Errorf("the run did not go on after failures: %+v", tr)
	}
	robustNoneLeft(t, marker)
	robustNoTempDirs(t, m.RunID)
	if n := duckCount(t, filepath.Join(dir, "results", "latest", "trials.parquet")); n < 1 {
		t.Errorf("trials.parquet has %d rows; the good trial is missing", n)
	}
	t.Run("service death fails its trial", func(t *testing.T) {
		if tr := m.Trials[0]; tr.Status != "failed" || !strings.Contains(tr.Error, "exit") {
			t.Errorf("service dying during the load: %+v; want the trial failed, saying the service exited\n%s", tr, stderr)
		}
	})
}

// TestRobustDoubleInterrupt: a second Ctrl-C right after the first exits at
// once with status 130 and kills the service. The service's shell lingers
// after SIGTERM, so the graceful teardown the first Ctrl-C starts would
// take the whole stop_timeout: only the forced exit ends the run quickly.
func TestRobustDoubleInterrupt(t *testing.T) {
	marker := robustMarker()
	src := fmt.Sprintf(`
pipeline "double-interrupt" {}
service "web" {
  command = ["sh", "-c", "trap 'sleep 30' TERM; \"$@\" & wait $!; wait", "sh",
             benchflow.bin, "serve", "--addr", "127.0.0.1:${self.port.http}", "--size", "%s"]
  port "http" {}
  health { http = "/" }
}
step "load" "main" {
  target      = service.web.url
  connections = 2
  threads     = 1
  duration    = "60s"
  rate        = 200
}
`, marker)
	dir := robustWrite(t, map[string]string{"p.hcl": src})
	cmd := exec.Command(bin, "apply", "p.hcl", "--out", "results")
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		for _, pid := range servePIDs(marker) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	// Wait for the service to answer, then a little load.
	deadline := time.Now().Add(30 * time.Second)
	for len(servePIDs("--size "+marker)) == 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if len(servePIDs("--size "+marker)) == 0 {
		t.Fatalf("the service never started\n%s", stderr.String())
	}
	time.Sleep(1 * time.Second)
	_ = cmd.Process.Signal(syscall.SIGINT)
	time.Sleep(20 * time.Millisecond)
	_ = cmd.Process.Signal(syscall.SIGINT)
	var werr error
	select {
	case werr = <-done:
	case <-time.After(20 * time.Second):
		t.Fatalf("apply still running 20s after two SIGINTs\n%s", stderr.String())
	}
	robustNoCrash(t, []string{"apply"}, stderr.String())
	var ee *exec.ExitError
	if !errorsAs(werr, &ee) || ee.ExitCode() != 130 {
		t.Errorf("exit %v, want status 130\n%s", werr, stderr.String())
	}
	if !strings.Contains(stderr.String(), "forced exit") {
		t.Errorf("the second Ctrl-C was not reported as a forced exit:\n%s", stderr.String())
	}
	robustNoneLeft(t, marker)
	if runs, _ := filepath.Glob(filepath.Join(dir, "results", "2*")); len(runs) == 1 {
		robustNoTempDirs(t, filepath.Base(runs[0]))
		// The manifest is rewritten through a temporary file: whatever
		// state it was left in, it parses.
		readManifest(t, runs[0])
	} else {
		t.Errorf("want one run directory, found %v", runs)
	}
}

// robustTrialIDs returns the trial ids present in a Parquet results file
// (none when the file does not exist).
func robustTrialIDs(t *testing.T, file string) map[string]bool {
	t.Helper()
	ids := map[string]bool{}
	if _, err := os.Stat(file); err != nil {
		return ids
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(fmt.Sprintf("SELECT DISTINCT trial_id FROM read_parquet('%s')", file))
	if err != nil {
		t.Fatalf("reading %s: %v", file, err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids[id] = true
	}
	return ids
}

// TestRobustLoadServerDies: the server answers 50 requests on kept-alive
// connections, then closes its listener and every connection. load goes on
// until -n/-d, counts the failures by class and exits 0 because some
// requests succeeded.
func TestRobustLoadServerDies(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu     sync.Mutex
		conns  []net.Conn
		served int
		dead   bool
		wg     sync.WaitGroup
	)
	die := func() {
		mu.Lock()
		defer mu.Unlock()
		if dead {
			return
		}
		dead = true
		ln.Close()
		for _, c := range conns {
			c.Close()
		}
	}
	t.Cleanup(func() { die(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			if dead {
				mu.Unlock()
				c.Close()
				return
			}
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if line != "\r\n" {
						continue
					}
					mu.Lock()
					if served == 50 {
						mu.Unlock()
						return
					}
					served++
					last := served == 50
					mu.Unlock()
					if _, err := c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nhello\n")); err != nil {
						return
					}
					if last {
						die()
						return
					}
				}
			}()
		}
	}()
	url := "http://" + ln.Addr().String() + "/"
	stdout, stderr, code := robustRun(t, "", 30*time.Second, "load", "--json", "-c", "2", "-t", "1", "-n", "400", "-d", "2s", "--timeout", "200ms", url)
	if code != 0 {
		t.Errorf("exit %d, want 0 (some requests succeeded)\n%s%s", code, stdout, stderr)
	}
	var j struct {
		Requests int64            `json:"requests"`
		Errors   int64            `json:"errors"`
		ErrorsBy map[string]int64 `json:"errors_by"`
		Status   map[string]int64 `json:"status"`
	}
	if err := json.Unmarshal([]byte(stdout), &j); err != nil {
		t.Fatalf("--json output does not parse: %v\n%s", err, stdout)
	}
	t.Logf("%+v", j)
	if j.Status["200"] < 1 || j.Status["200"] > 50 {
		t.Errorf("%d responses with status 200, want 1 to 50 (the server answered 50): %+v", j.Status["200"], j)
	}
	if j.Errors == 0 || j.ErrorsBy["connect"]+j.ErrorsBy["read"]+j.ErrorsBy["write"] == 0 {
		t.Errorf("the server's death is not counted as connect/read/write errors: %+v", j)
	}
}

// TestRobustCorruptResults: report and compare read run directories whose
// files are garbage, truncated, empty or bit-flipped: never a crash, and a
// file that cannot be read is named.
func TestRobustCorruptResults(t *testing.T) {
	marker := robustMarker()
	dir := robustWrite(t, map[string]string{"p.hcl": fmt.Sprintf(`
pipeline "corrupt" {}
matrix { size = ["%s"] }
service "web" {
  command = [benchflow.bin, "serve", "--addr", "127.0.0.1:${self.port.http}", "--size", matrix.size]
  port "http" {}
  health { http = "/" }
}
step "load" "main" {
  target      = service.web.url
  connections = 2
  threads     = 1
  requests    = 300
  interval    = "10ms"
}
`, marker)})
	if stdout, stderr, code := robustRun(t, dir, 60*time.Second, "apply", "p.hcl", "--out", "results"); code != 0 {
		t.Fatalf("apply: exit %d\n%s%s", code, stdout, stderr)
	}
	robustNoneLeft(t, marker)
	good := mustEval(t, filepath.Join(dir, "results", "latest"))
	trials, err := os.ReadFile(filepath.Join(good, "trials.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	type variant struct {
		name, file string
		content    []byte // nil removes the file
		mustFail   bool
		flipped    bool
	}
	variants := []variant{
		{"manifest truncated", "manifest.json", []byte(`{"run_id":`), true, false},
		{"manifest empty", "manifest.json", []byte{}, true, false},
		{"manifest not an object", "manifest.json", []byte(`[1, 2, 3]`), true, false},
		{"trials garbage", "trials.parquet", []byte("garbage\n"), true, false},
		{"trials truncated", "trials.parquet", trials[:len(trials)/2], true, false},
		{"trials empty", "trials.parquet", []byte{}, true, false},
		{"timeseries garbage", "timeseries.parquet", []byte("PAR1 not really PAR1"), true, false},
		{"latency missing", "latency.parquet", nil, false, false},
		// Another table in the file's place, or a manifest that says
		// nothing: refused, naming the file (not empty rows or p50 0.00).
		{"trials is timeseries", "trials.parquet", mustRead(t, filepath.Join(good, "timeseries.parquet")), true, false},
		{"latency is processes", "latency.parquet", mustRead(t, filepath.Join(good, "processes.parquet")), true, false},
		{"latency is trials", "latency.parquet", trials, true, false},
		{"manifest {}", "manifest.json", []byte(`{}`), true, false},
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 12; i++ {
		b := append([]byte(nil), trials...)
		for j := 0; j < 1+i%4; j++ {
			b[4+rng.IntN(len(b)-12)] = byte(rng.IntN(256))
		}
		variants = append(variants, variant{fmt.Sprintf("trials bit-flipped %02d", i), "trials.parquet", b, false, true})
	}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			run := filepath.Join(t.TempDir(), "run")
			if err := os.CopyFS(run, os.DirFS(good)); err != nil {
				t.Fatal(err)
			}
			target := filepath.Join(run, v.file)
			if v.content == nil {
				if err := os.Remove(target); err != nil {
					t.Fatal(err)
				}
			} else if err := os.WriteFile(target, v.content, 0o644); err != nil {
				t.Fatal(err)
			}
			if v.file == "latency.parquet" && v.content == nil {
				t.Run("no made-up latencies", func(t *testing.T) {
					stdout, _, _ := robustRun(t, dir, 30*time.Second, "report", run)
					if !strings.Contains(stdout, "latency.parquet") && regexp.MustCompile(`\s0\.00\s`).MatchString(stdout) {
						t.Errorf("report shows zero latencies for a run without latency.parquet:\n%s", stdout)
					}
				})
			}
			for _, args := range [][]string{{"report", run}, {"report", "--format", "json", run}, {"compare", good, run}} {
				_, stderr, code := robustRun(t, dir, 30*time.Second, args...)
				if v.mustFail && code != 1 {
					t.Errorf("%s: exit %d, want 1\n%s", args[0], code, stderr)
				}
				if code != 0 && !strings.Contains(stderr, v.file) {
					t.Errorf("%s: exit %d without naming %s:\n%s", args[0], code, v.file, stderr)
				}
			}
		})
	}
}

// TestRobustLoadOutFullDisk: `load --out` onto a disk with 8 KiB left says
// so, exits 1, and leaves no temporary file; what it did write parses.
func TestRobustLoadOutFullDisk(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs (%v): %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
			t.Errorf("unmounting %s: %v: %s", mnt, err, out)
		}
	})
	if err := os.WriteFile(filepath.Join(mnt, "filler"), make([]byte, 56<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "hello\n") }))
	t.Cleanup(srv.Close)
	stdout, stderr, code := robustRun(t, "", 30*time.Second, "load", "-c", "2", "-t", "1", "-n", "200", "--out", filepath.Join(mnt, "r.parquet"), srv.URL+"/")
	if code != 1 {
		t.Errorf("exit %d, want 1\n%s%s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "no space left on device") {
		t.Errorf("stderr does not say the disk is full:\n%s", stderr)
	}
	if !strings.Contains(stdout, "Requests/sec:") {
		t.Errorf("the summary was not printed before the write failed:\n%s", stdout)
	}
	ents, err := os.ReadDir(mnt)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		switch name := e.Name(); {
		case name == "filler":
		case strings.Contains(name, ".tmp"):
			t.Errorf("temporary file left behind: %s", name)
		case strings.HasSuffix(name, ".parquet"):
			duckCount(t, filepath.Join(mnt, name))
		default:
			t.Errorf("unexpected file %s", name)
		}
	}
}

// TestRobustValidateStarlark: broken Starlark pipelines (syntax errors,
// runtime errors, runaway loops and recursion, huge allocations, binary
// junk) are reported at a location, never crash and never hang.
func TestRobustValidateStarlark(t *testing.T) {
	inputs := []struct{ src, want string }{
		{"", "Missing pipeline block"},
		{"pipeline(", "s.star:1,10: Starlark syntax error"},
		{"\x00\xff", "s.star:1,1:"},
		{`load("missing.star", "x")`, "missing.star"},
		{"def f():\n  return f()\nf()", "s.star:2,"},
		{"x = 1 // 0", "s.star:1,7:"},
		{`fail("boom")`, "boom"},
		{`x = "a" * 100000000000`, "s.star:1,"},
		{"for i in range(100000000000):\n  pass", "Execution step limit exceeded"},
		{"pipeline(name = 1)", "s.star:1,"},
		{"pipeline(name = \"p\")\nstep.load(\"main\", target = 3)", "s.star:2,28: Invalid URL"},
	}
	star := regexp.MustCompile(`^s\.star:\d+,\d+: \S`)
	for i, in := range inputs {
		dir := robustWrite(t, map[string]string{"s.star": in.src})
		_, stderr, code := robustRun(t, dir, 60*time.Second, "validate", "s.star")
		if code != 1 {
			t.Errorf("input %d %q: exit %d, want 1\n%s", i, in.src, code, stderr)
		}
		if !star.MatchString(stderr) {
			t.Errorf("input %d %q: first line is not FILE:LINE,COL: Summary:\n%s", i, in.src, stderr)
		}
		if !strings.Contains(stderr, in.want) {
			t.Errorf("input %d %q: output lacks %q:\n%s", i, in.src, in.want, stderr)
		}
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
