package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// trustStudy is a bundle a reader should not trust blindly: its service
// writes a marker into $HOME before serving, and its exec step connects
// to a port on the host's loopback (var.port).
const trustStudy = `
pipeline "trusty" {
  repetitions = 1
}
variable "port" { default = "1" }
service "web" {
  command = ["sh", "-c", "touch \"$HOME/marker\"; exec ${benchflow.bin} serve --addr 127.0.0.1:${self.port.http}"]
  port "http" {}
  health { http = "/" }
}
step "exec" "dial" {
  command = ["sh", "-c", "${benchflow.bin} load http://127.0.0.1:${var.port}/ -n 1 -c 1 -t 1 >/dev/null 2>&1; exit 0"]
}
step "load" "main" {
  target      = "${service.web.url}/"
  connections = 1
  threads     = 1
  requests    = 50
}
claim "serves" {
  metric = "requests"
  value  = "> 1"
}
`

// listener counts the connections a loopback port of the host accepts.
type listener struct {
	ln net.Listener
	n  atomic.Int64
}

func listen(t *testing.T) *listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &listener{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			l.n.Add(1)
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return l
}

func (l *listener) port() int { return l.ln.Addr().(*net.TCPAddr).Port }

// runHome runs the binary in dir with HOME set to home and stdin not a
// terminal, bounded by five minutes (a hang fails, not blocks; on a busy
// machine each trial may run three times: busy_rerun).
func runHome(t *testing.T, dir, home string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+home)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("benchflow %s: did not end within 5 minutes\n%s", strings.Join(args, " "), out)
	}
	return string(out), err
}

// publishStudy applies src (as study.hcl) in a new folder with HOME at
// a home of the publisher's and publishes the run; it returns the
// bundle's folder.
func publishStudy(t *testing.T, src string, vars ...string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "study.hcl"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"apply", "study.hcl", "--out", "results", "-q"}
	for _, v := range vars {
		args = append(args, "--var", v)
	}
	if out, err := runHome(t, dir, t.TempDir(), args...); err != nil {
		t.Fatalf("apply: %v\n%s", err, out)
	}
	if out, err := runHome(t, dir, t.TempDir(), "publish", "results/latest", "bundle"); err != nil {
		t.Fatalf("publish: %v\n%s", err, out)
	}
	return filepath.Join(dir, "bundle")
}

// resum rewrites the bundle's SHA256SUMS line of name after an edit.
func resum(t *testing.T, bundleDir, name string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(bundleDir, name))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	sp := filepath.Join(bundleDir, "SHA256SUMS")
	sums, _ := os.ReadFile(sp)
	re := regexp.MustCompile(`(?m)^[0-9a-f]{64}  ` + regexp.QuoteMeta(name) + `$`)
	if !re.Match(sums) {
		t.Fatalf("SHA256SUMS does not list %s", name)
	}
	os.WriteFile(sp, re.ReplaceAll(sums, []byte(hex.EncodeToString(sum[:])+"  "+name)), 0o644)
}

// rewritePipeline replaces the bundle's pipeline.hcl by src; with
// manifestToo the manifest records its sha256 (a consistent bundle),
// without it only SHA256SUMS follows (the manifest's sha256 no longer
// matches).
func rewritePipeline(t *testing.T, bundleDir, src string, manifestToo bool) {
	t.Helper()
	os.WriteFile(filepath.Join(bundleDir, "pipeline.hcl"), []byte(src), 0o644)
	resum(t, bundleDir, "pipeline.hcl")
	if !manifestToo {
		return
	}
	mp := filepath.Join(bundleDir, "manifest.json")
	mb, _ := os.ReadFile(mp)
	sum := sha256.Sum256([]byte(src))
	re := regexp.MustCompile(`("pipeline": \{[^}]*?"sha256": ")[0-9a-f]{64}"`)
	if !re.Match(mb) {
		t.Fatalf("manifest.json has no pipeline sha256:\n%s", mb)
	}
	os.WriteFile(mp, re.ReplaceAll(mb, []byte("${1}"+hex.EncodeToString(sum[:])+`"`)), 0o644)
	resum(t, bundleDir, "manifest.json")
}

// TestReproduceAsksAndConfines: without --yes and without a terminal
// nothing runs (no marker, no connection, no results folder) and the
// plan names the service's command and the exec step's; with --yes the
// run happens in the sandbox: the marker the service writes into $HOME
// is not in the reader's home, the exec step's connection to the host's
// loopback does not arrive, and the claim is judged.
func TestReproduceAsksAndConfines(t *testing.T) {
	l := listen(t)
	b := publishStudy(t, trustStudy, fmt.Sprintf("port=%d", l.port()))
	if l.n.Load() == 0 {
		t.Fatal("the published run did not connect to the host's port: the test proves nothing")
	}
	before := l.n.Load()
	home, work := t.TempDir(), t.TempDir()

	out, err := runHome(t, work, home, "reproduce", b, "--out", "again")
	if code := exitCode(err); code != 1 {
		t.Fatalf("reproduce without --yes: exit %d, want 1\n%s", code, out)
	}
	for _, want := range []string{`touch "$HOME/marker"`, "exec.dial", "load http://127.0.0.1:", "pass --yes", "nothing ran", "checksums", "pipeline.hcl has the sha256", "unsigned", "network: its own loopback only"} {
		if !strings.Contains(out, want) {
			t.Errorf("the plan lacks %q:\n%s", want, out)
		}
	}
	if _, err := os.Stat(filepath.Join(home, "marker")); err == nil {
		t.Error("without --yes the service ran: $HOME/marker exists")
	}
	if _, err := os.Stat(filepath.Join(work, "again")); err == nil {
		t.Error("without --yes a results folder was made")
	}
	if n := l.n.Load(); n != before {
		t.Errorf("without --yes the exec step connected to the host (%d connections)", n-before)
	}

	out, err = runHome(t, work, home, "reproduce", b, "--yes", "--out", "again", "-q")
	if err != nil {
		t.Fatalf("reproduce --yes: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(home, "marker")); err == nil {
		t.Error("the confined service wrote into the reader's home")
	}
	if n := l.n.Load(); n != before {
		t.Errorf("the confined exec step reached the host's loopback (%d connections)", n-before)
	}
	// One repetition: the claim is judged, inconclusive (no interval).
	if !regexp.MustCompile(`(?m)^\s+serves\s+(holds|inconclusive)\s+(holds|inconclusive)\s+50\b`).MatchString(out) {
		t.Errorf("the claim was not judged here on 50 requests:\n%s", out)
	}
	runs, _ := filepath.Glob(filepath.Join(work, "again", "2*"))
	if len(runs) != 1 {
		t.Fatalf("want the run in again/, got %v", runs)
	}
	// The run records its confinement, so a comparison can say what the
	// sandbox hid.
	if got, want := readManifest(t, runs[0]).Environment["sandbox"], "bubblewrap; grants: none; network: own"; got != want {
		t.Errorf("the run's environment.sandbox = %v, want %q", got, want)
	}
}

// TestReproduceNoSandbox: --no-sandbox still prints the plan (saying it
// runs unconfined) and needs consent, then runs as the user: the marker is
// in $HOME.
func TestReproduceNoSandbox(t *testing.T) {
	b := publishStudy(t, trustStudy)
	home, work := t.TempDir(), t.TempDir()
	out, err := runHome(t, work, home, "reproduce", b, "--no-sandbox", "--out", "again")
	if code := exitCode(err); code != 1 || !strings.Contains(out, "NONE (--no-sandbox)") || !strings.Contains(out, "pass --yes") {
		t.Fatalf("--no-sandbox without --yes: exit %d\n%s", code, out)
	}
	if _, err := os.Stat(filepath.Join(home, "marker")); err == nil {
		t.Fatal("--no-sandbox without --yes ran the service")
	}
	out, err = runHome(t, work, home, "reproduce", b, "--no-sandbox", "--yes", "--out", "again", "-q")
	if err != nil {
		t.Fatalf("--no-sandbox --yes: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(home, "marker")); err != nil {
		t.Errorf("unconfined, the service's marker is not in $HOME: %v", err)
	}
	if out, err := runHome(t, work, home, "reproduce", b, "--no-sandbox", "--allow", "docker", "--plan"); exitCode(err) != 1 || !strings.Contains(out, "cannot be used together") {
		t.Errorf("--no-sandbox --allow: %v\n%s", err, out)
	}
}

// TestReproducePlanJSON: --plan --json (and --format json with --plan)
// prints the documented shape and runs nothing.
func TestReproducePlanJSON(t *testing.T) {
	l := listen(t)
	b := publishStudy(t, trustStudy, fmt.Sprintf("port=%d", l.port()))
	before := l.n.Load()
	home, work := t.TempDir(), t.TempDir()
	for _, flags := range [][]string{{"--plan", "--json"}, {"--plan", "--format", "json"}} {
		cmd := exec.Command(bin, append([]string{"reproduce", b}, flags...)...)
		cmd.Dir, cmd.Env = work, append(os.Environ(), "HOME="+home)
		stdout, err := cmd.Output()
		if err != nil {
			t.Fatalf("%v: %v", flags, err)
		}
		var p struct {
			Bundle   string `json:"bundle"`
			Pipeline string `json:"pipeline"`
			Trials   int    `json:"trials"`
			Services []struct {
				Name         string   `json:"name"`
				Provider     string   `json:"provider"`
				ProviderType string   `json:"provider_type"`
				Command      []string `json:"command"`
				Dir          string   `json:"dir"`
				Ports        []string `json:"ports"`
				TrialCount   int      `json:"trial_count"`
			} `json:"services"`
			Steps []struct {
				Address string   `json:"address"`
				Kind    string   `json:"kind"`
				Command []string `json:"command"`
				Targets []string `json:"targets"`
			} `json:"steps"`
			Targets []struct{ URL, Reach string } `json:"targets"`
			Needs   []struct {
				Grant string   `json:"grant"`
				Why   []string `json:"why"`
			} `json:"needs"`
			Sandbox []string `json:"sandbox"`
			Checks  []struct {
				Name string `json:"name"`
				OK   bool   `json:"ok"`
			} `json:"checks"`
			Notes []string `json:"notes"`
		}
		if err := json.Unmarshal(stdout, &p); err != nil {
			t.Fatalf("%v: not JSON: %v\n%s", flags, err, stdout)
		}
		if p.Pipeline != "trusty" || p.Trials != 1 || len(p.Services) != 1 || p.Services[0].ProviderType != "local" ||
			!strings.Contains(strings.Join(p.Services[0].Command, " "), `touch "$HOME/marker"`) || p.Services[0].TrialCount != 1 {
			t.Errorf("%v: services %+v", flags, p.Services)
		}
		kinds := map[string]string{}
		for _, s := range p.Steps {
			kinds[s.Address] = s.Kind + " " + strings.Join(s.Command, " ") + strings.Join(s.Targets, " ")
		}
		if !strings.Contains(kinds["exec.dial"], "load http://127.0.0.1:") || !strings.Contains(kinds["load.main"], "${service.web.url}/") {
			t.Errorf("%v: steps %+v", flags, p.Steps)
		}
		if len(p.Targets) != 1 || p.Targets[0].Reach != "service" || len(p.Needs) != 0 || len(p.Sandbox) == 0 || len(p.Checks) != 3 {
			t.Errorf("%v: targets %+v needs %+v sandbox %d lines checks %+v", flags, p.Targets, p.Needs, len(p.Sandbox), p.Checks)
		}
	}
	if l.n.Load() != before {
		t.Error("--plan ran the exec step")
	}
}

// TestReproduceRefuses: what the bundle may not decide or hide — a
// grant not given (docker; host-network for a check of the host's
// loopback or of another machine), a pipeline whose sha256 is not the
// manifest's, an entry of SHA256SUMS that is not a regular file (FIFO,
// symlink to /dev/zero, folder; none is opened, nothing hangs) — is
// refused before anything runs; a bundle's output { dir } is ignored
// with a note.
func TestReproduceRefuses(t *testing.T) {
	b := publishStudy(t, trustStudy)
	src, _ := os.ReadFile(filepath.Join(b, "pipeline.hcl"))
	home := t.TempDir()
	copyBundle := func() string {
		d := filepath.Join(t.TempDir(), "b")
		if out, err := exec.Command("cp", "-a", b, d).CombinedOutput(); err != nil {
			t.Fatalf("cp: %v %s", err, out)
		}
		return d
	}
	nothingRan := func(name, work string) {
		t.Helper()
		if _, err := os.Stat(filepath.Join(work, "again")); err == nil {
			t.Errorf("%s: a results folder was made", name)
		}
		if _, err := os.Stat(filepath.Join(home, "marker")); err == nil {
			t.Errorf("%s: the service ran", name)
		}
	}

	t.Run("docker without --allow docker", func(t *testing.T) {
		d := copyBundle()
		docker := strings.Replace(string(src), `service "web" {`, `provider "docker" "box" {}
service "web" {
  image = "nginx:alpine"`, 1)
		rewritePipeline(t, d, docker, true)
		work := t.TempDir()
		out, err := runHome(t, work, home, "reproduce", d, "--yes", "--out", "again")
		if code := exitCode(err); code != 1 || !strings.Contains(out, "--allow docker") || !strings.Contains(out, "the Docker socket") || !strings.Contains(out, "nothing ran") {
			t.Errorf("exit %d, want 1 naming the grant and the flag:\n%s", code, out)
		}
		nothingRan("docker", work)
		out, err = runHome(t, work, home, "reproduce", d, "--allow", "docker,tune", "--plan")
		if err != nil || strings.Contains(out, "needs what the sandbox does not give") || !strings.Contains(out, "docker (granted)") {
			t.Errorf("--allow docker --plan: %v\n%s", err, out)
		}
		out, err = runHome(t, work, home, "reproduce", d, "--allow", "dockr", "--plan")
		if code := exitCode(err); code != 1 || !strings.Contains(out, `unknown grant "dockr"`) {
			t.Errorf("--allow dockr: exit %d\n%s", code, out)
		}
	})

	t.Run("a target on the host's loopback or outside", func(t *testing.T) {
		for _, u := range []string{"http://127.0.0.1:1/", "http://localhost:9/x", "http://192.0.2.1/"} {
			d := copyBundle()
			rewritePipeline(t, d, string(src)+fmt.Sprintf("\nstep \"check\" \"host\" {\n  url = %q\n}\n", u), true)
			work := t.TempDir()
			out, err := runHome(t, work, home, "reproduce", d, "--yes", "--out", "again")
			if code := exitCode(err); code != 1 || !strings.Contains(out, "--allow host-network") || !strings.Contains(out, "reaches "+u) {
				t.Errorf("%s: exit %d, want 1 naming the grant and the target:\n%s", u, code, out)
			}
			nothingRan(u, work)
		}
		// A service's own port on loopback is the run's: no grant.
		d := copyBundle()
		rewritePipeline(t, d, string(src)+"\nstep \"check\" \"port\" {\n  url = \"http://127.0.0.1:${service.web.port}/\"\n}\n", true)
		out, err := runHome(t, t.TempDir(), home, "reproduce", d, "--plan")
		if err != nil || !strings.Contains(out, "needs beyond the sandbox\n  nothing") || !strings.Contains(out, "http://127.0.0.1:0/  (a service of this run)") {
			t.Errorf("a check of service.web.port: %v\n%s", err, out)
		}
	})

	t.Run("no bwrap", func(t *testing.T) {
		work := t.TempDir()
		cmd := exec.Command(bin, "reproduce", b, "--yes", "--out", "again")
		cmd.Dir, cmd.Env = work, append(os.Environ(), "HOME="+home, "PATH="+t.TempDir())
		out, err := cmd.CombinedOutput()
		if code := exitCode(err); code != 1 || !strings.Contains(string(out), "bwrap not found") || !strings.Contains(string(out), "--no-sandbox") || !strings.Contains(string(out), "nothing ran") {
			t.Errorf("exit %d, want 1 saying how to install bwrap:\n%s", code, out)
		}
		nothingRan("no bwrap", work)
	})

	t.Run("pipeline sha256 not the manifest's", func(t *testing.T) {
		d := copyBundle()
		rewritePipeline(t, d, string(src)+"\n# edited\n", false)
		work := t.TempDir()
		out, err := runHome(t, work, home, "reproduce", d, "--yes", "--out", "again")
		if code := exitCode(err); code != 1 || !strings.Contains(out, "manifest.json records") || !strings.Contains(out, "refusing it") {
			t.Errorf("exit %d, want 1 naming the mismatch:\n%s", code, out)
		}
		nothingRan("sha256", work)
	})

	for _, kind := range []string{"fifo", "symlink to /dev/zero", "folder"} {
		t.Run("variables.json is a "+kind, func(t *testing.T) {
			d := copyBundle()
			p := filepath.Join(d, "variables.json")
			os.Remove(p)
			var err error
			switch kind {
			case "fifo":
				err = syscall.Mkfifo(p, 0o644)
			case "folder":
				err = os.Mkdir(p, 0o755)
			default:
				err = os.Symlink("/dev/zero", p)
			}
			if err != nil {
				t.Fatal(err)
			}
			work := t.TempDir()
			out, rerr := runHome(t, work, home, "reproduce", d, "--yes", "--out", "again")
			if code := exitCode(rerr); code != 1 || !strings.Contains(out, "variables.json is ") || !strings.Contains(out, "not a regular file") {
				t.Errorf("exit %d, want 1 naming variables.json:\n%s", code, out)
			}
			nothingRan(kind, work)
		})
	}

	t.Run("output dir ignored", func(t *testing.T) {
		d := copyBundle()
		elsewhere := filepath.Join(t.TempDir(), "elsewhere")
		rewritePipeline(t, d, string(src)+fmt.Sprintf("\noutput {\n  dir = %q\n}\n", elsewhere), true)
		work := t.TempDir()
		// The note is in the plan, which -q leaves out when --yes gave
		// consent.
		out, err := runHome(t, work, home, "reproduce", d, "--yes")
		if err != nil {
			t.Fatalf("reproduce: %v\n%s", err, out)
		}
		if !strings.Contains(out, "is ignored") {
			t.Errorf("no note that output { dir } is ignored:\n%s", out)
		}
		if _, err := os.Stat(elsewhere); err == nil {
			t.Error("the bundle's output dir was written")
		}
		if runs, _ := filepath.Glob(filepath.Join(work, "reproduce-trusty", "2*")); len(runs) != 1 {
			t.Errorf("want the run in reproduce-trusty/ (the default --out), got %v", runs)
		}
	})
}

// TestReproduceQuickstartConfined: the quickstart's published bundle
// reproduces in the sandbox with both claims evaluated.
func TestReproduceQuickstartConfined(t *testing.T) {
	work := t.TempDir()
	b, _ := filepath.Abs("../../examples/quickstart/bundle")
	out, err := runHome(t, work, t.TempDir(), "reproduce", b, "--yes", "--var", "duration=1s", "-q", "--exit-on", "none")
	if err != nil {
		t.Fatalf("reproduce: %v\n%s", err, out)
	}
	for _, c := range []string{"keepalive-pays", "big-is-cheap"} {
		if !regexp.MustCompile(`(?m)^\s+` + c + `\s+(holds|fails|inconclusive)\s+(holds|fails|inconclusive)\b`).MatchString(out) {
			t.Errorf("claim %s not evaluated here:\n%s", c, out)
		}
	}
}

// TestReproduceInterrupt: SIGINT to reproduce reaches the confined run,
// which stops its trial and tears down: reproduce exits 130, the service
// is gone and the run is marked interrupted.
func TestReproduceInterrupt(t *testing.T) {
	size := fmt.Sprintf("%d", 5000+time.Now().UnixNano()%1000)
	b := publishStudy(t, fmt.Sprintf(`
pipeline "stoppable" {}
variable "duration" { default = "300ms" }
service "web" {
  command = [benchflow.bin, "serve", "--addr", "127.0.0.1:${self.port.http}", "--size", "%s"]
  port "http" {}
  health { http = "/" }
}
step "load" "main" {
  target      = service.web.url
  connections = 1
  threads     = 1
  duration    = var.duration
}
`, size))
	work := t.TempDir()
	cmd := exec.Command(bin, "reproduce", b, "--yes", "--var", "duration=60s", "--out", "again", "-q")
	cmd.Dir, cmd.Env = work, append(os.Environ(), "HOME="+t.TempDir())
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	deadline := time.Now().Add(60 * time.Second)
	for len(servePIDs("--size "+size)) == 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if len(servePIDs("--size "+size)) == 0 {
		t.Fatal("the confined service never started")
	}
	time.Sleep(time.Second) // into the load
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var werr error
	select {
	case werr = <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("reproduce did not end within 60s of SIGINT")
	}
	if code := exitCode(werr); code != 130 {
		t.Errorf("exit %d (%v), want 130", code, werr)
	}
	if left := servePIDs("--size " + size); len(left) > 0 {
		t.Errorf("processes still alive after SIGINT: %v", left)
	}
	if m := readManifest(t, filepath.Join(work, "again", "latest")); m.Status != "interrupted" {
		t.Errorf("run status %q, want interrupted", m.Status)
	}
}

// TestReproduceSignature: the plan's signature line — unsigned, signed by
// a key the bundle carries, signed by an allowed signer — and the
// refusals: a signer the allowed-signers file does not list, an unsigned
// bundle with --allowed-signers, a signature that no longer verifies
// (SHA256SUMS changed after signing, its checksums consistent).
func TestReproduceSignature(t *testing.T) {
	b := publishStudy(t, trustStudy)
	keys := t.TempDir()
	for _, k := range []string{"alice", "mallory"} {
		if out, err := sshKeygen(t, keys, nil, "-q", "-t", "ed25519", "-N", "", "-C", k, "-f", k); err != nil {
			t.Fatalf("ssh-keygen: %v\n%s", err, out)
		}
	}
	pub := func(k string) string {
		b, _ := os.ReadFile(filepath.Join(keys, k+".pub"))
		return strings.TrimSpace(string(b))
	}
	allowed := filepath.Join(keys, "allowed")
	os.WriteFile(allowed, []byte("alice@example.com "+pub("alice")+"\n"), 0o644)
	home := t.TempDir()

	out, err := runHome(t, t.TempDir(), home, "reproduce", b, "--plan")
	if err != nil || !strings.Contains(out, "unsigned: nothing says who published it") {
		t.Errorf("unsigned: %v\n%s", err, out)
	}
	out, err = runHome(t, t.TempDir(), home, "reproduce", b, "--plan", "--allowed-signers", allowed)
	if code := exitCode(err); code != 1 || !strings.Contains(out, "is not signed") {
		t.Errorf("unsigned with --allowed-signers: exit %d\n%s", code, out)
	}

	signed := func(key string) string {
		d := filepath.Join(t.TempDir(), "signed")
		if out, err := runHome(t, t.TempDir(), home, "publish", b, d, "--sign", filepath.Join(keys, key)); err != nil {
			t.Fatalf("publish --sign: %v\n%s", err, out)
		}
		return d
	}
	s := signed("alice")
	out, err = runHome(t, t.TempDir(), home, "reproduce", s, "--plan")
	if err != nil || !strings.Contains(out, "signed by ssh-ed25519 SHA256:") || !strings.Contains(out, "a key it carries itself") {
		t.Errorf("signed, no allowed signers: %v\n%s", err, out)
	}
	out, err = runHome(t, t.TempDir(), home, "reproduce", s, "--plan", "--allowed-signers", allowed)
	if err != nil || !strings.Contains(out, "signed by alice@example.com (ssh-ed25519 SHA256:") || !strings.Contains(out, "allowed by "+allowed) {
		t.Errorf("signed by an allowed signer: %v\n%s", err, out)
	}
	m := signed("mallory")
	work := t.TempDir()
	out, err = runHome(t, work, home, "reproduce", m, "--yes", "--out", "again", "--allowed-signers", allowed)
	if code := exitCode(err); code != 1 || !strings.Contains(out, "does not list as an allowed signer") {
		t.Errorf("a signer not allowed: exit %d\n%s", code, out)
	}
	// SHA256SUMS changed after signing (a file and its line edited).
	os.WriteFile(filepath.Join(s, "variables.json"), []byte("{}\n"), 0o644)
	resum(t, s, "variables.json")
	out, err = runHome(t, work, home, "reproduce", s, "--yes", "--out", "again")
	if code := exitCode(err); code != 1 || !strings.Contains(out, "does not verify") {
		t.Errorf("a signature that no longer verifies: exit %d\n%s", code, out)
	}
	if _, err := os.Stat(filepath.Join(work, "again")); err == nil {
		t.Error("a refused signature ran the bundle")
	}
}
