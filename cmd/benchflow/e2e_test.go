package main

import (
	"bufio"
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	_ "github.com/duckdb/duckdb-go/v2"
)

var bin string

func TestMain(m *testing.M) {
	bin = os.Getenv("BENCHFLOW_BIN")
	if bin == "" {
		dir, err := os.MkdirTemp("", "benchflow-e2e-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		bin = filepath.Join(dir, "benchflow")
		out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
		if err != nil {
			fmt.Fprintf(os.Stderr, "building benchflow: %v\n%s", err, out)
			os.Exit(1)
		}
		code := m.Run()
		os.RemoveAll(dir)
		os.Exit(code)
	}
	os.Exit(m.Run())
}

type manifest struct {
	RunID  string `json:"run_id"`
	Status string `json:"status"`
	Trials []struct {
		TrialID string `json:"trial_id"`
		Status  string `json:"status"`
		Error   string `json:"error"`
	} `json:"trials"`
	Environment map[string]any `json:"environment"`
}

func readManifest(t *testing.T, dir string) manifest {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m manifest
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("manifest.json does not parse: %v", err)
	}
	return m
}

func duckCount(t *testing.T, file string) int {
	t.Helper()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(fmt.Sprintf("SELECT count(*) FROM read_parquet('%s')", file)).Scan(&n); err != nil {
		t.Fatalf("reading %s with DuckDB: %v", file, err)
	}
	return n
}

// TestQuickstart runs the README's first command (shortened) and reads the
// result with an independent Parquet reader.
func TestQuickstart(t *testing.T) {
	out := t.TempDir()
	cmd := exec.Command(bin, "apply", "../../pipelines/quickstart.hcl", "--var", "duration=1s", "--repetitions", "1", "--out", out)
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("apply: %v\n%s", err, b)
	}
	latest := filepath.Join(out, "latest")
	m := readManifest(t, latest)
	if m.Status != "ok" || len(m.Trials) != 4 {
		t.Fatalf("manifest status %q with %d trials, want ok with 4", m.Status, len(m.Trials))
	}
	if n := duckCount(t, filepath.Join(latest, "trials.parquet")); n < 4 {
		t.Errorf("trials.parquet has %d rows, want one per trial and load step (4+)", n)
	}
	db, _ := sql.Open("duckdb", "")
	defer db.Close()
	var minRPS float64
	var bad int
	q := fmt.Sprintf(`SELECT min(rps), count(*) FILTER (WHERE status <> 'ok') FROM read_parquet('%s') WHERE step = 'main'`, filepath.Join(latest, "trials.parquet"))
	if err := db.QueryRow(q).Scan(&minRPS, &bad); err != nil {
		t.Fatal(err)
	}
	if minRPS <= 0 || bad != 0 {
		t.Errorf("load rows: min rps %v, %d not ok", minRPS, bad)
	}
	src, err := os.ReadFile(filepath.Join(latest, "pipeline.hcl"))
	orig, _ := os.ReadFile("../../pipelines/quickstart.hcl")
	if err != nil || !bytes.Equal(src, orig) {
		t.Error("pipeline.hcl is not the exact source that ran")
	}
}

// servePIDs finds processes whose command line contains marker.
func servePIDs(marker string) []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		var pid int
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if strings.Contains(strings.ReplaceAll(string(b), "\x00", " "), marker) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// TestInterrupt sends SIGINT to apply in the middle of the second trial.
func TestInterrupt(t *testing.T) {
	dir := t.TempDir()
	size := fmt.Sprintf("%d", 3000+rand.IntN(1000))
	pipeline := fmt.Sprintf(`
pipeline "interrupt" { order = "sequential" }
matrix { duration = ["1s", "30s"] }
service "web" {
  command = [benchflow.bin, "serve", "--addr", "127.0.0.1:${self.port.http}", "--size", "%s"]
  port "http" {}
  health { http = "/" }
}
step "load" "main" {
  target      = service.web.url
  connections = 2
  threads     = 1
  duration    = matrix.duration
}
`, size)
	file := filepath.Join(dir, "p.hcl")
	if err := os.WriteFile(file, []byte(pipeline), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "results")
	cmd := exec.Command(bin, "apply", file, "--out", out, "-v") // -v: the "started" lines
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	started := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		once := false
		for sc.Scan() {
			if !once && strings.Contains(sc.Text(), "trial c02-r1") && strings.Contains(sc.Text(), "started") {
				once = true
				close(started)
			}
		}
	}()
	select {
	case <-started:
	case <-time.After(60 * time.Second):
		t.Fatal("the second trial never started")
	}
	// Wait until the service of the second trial is up and loaded.
	deadline := time.Now().Add(20 * time.Second)
	for len(servePIDs("--size "+size)) == 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(1500 * time.Millisecond)
	if len(servePIDs("--size "+size)) == 0 {
		t.Fatal("the service of the second trial is not running")
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	werr := cmd.Wait()
	var ee *exec.ExitError
	if !errorsAs(werr, &ee) || ee.ExitCode() != 130 {
		t.Errorf("exit = %v, want status 130", werr)
	}
	if left := servePIDs("--size " + size); len(left) > 0 {
		t.Errorf("processes still alive after SIGINT: %v", left)
	}
	m := readManifest(t, filepath.Join(out, "latest"))
	if m.Status != "interrupted" {
		t.Errorf("run status %q, want interrupted", m.Status)
	}
	got := map[string]string{}
	for _, tr := range m.Trials {
		got[tr.TrialID] = tr.Status
	}
	if got["c01-r1"] != "ok" || got["c02-r1"] != "interrupted" {
		t.Errorf("trial statuses %v, want c01-r1 ok and c02-r1 interrupted", got)
	}
	if n := duckCount(t, filepath.Join(out, "latest", "trials.parquet")); n < 1 {
		t.Errorf("trials.parquet has %d rows; the completed trial is missing", n)
	}
	tmp, _ := filepath.Glob(filepath.Join(os.TempDir(), "benchflow-"+m.RunID+"-*"))
	if len(tmp) > 0 {
		t.Errorf("service folders left behind: %v", tmp)
	}
}

func errorsAs(err error, target **exec.ExitError) bool {
	e, ok := err.(*exec.ExitError)
	if ok {
		*target = e
	}
	return ok
}

var locRe = regexp.MustCompile(`^[^\s:]+\.hcl:\d+,\d+: \S`)

// TestValidateNeverPanics feeds validate garbage and mutated pipelines.
func TestValidateNeverPanics(t *testing.T) {
	seed, err := os.ReadFile("../../pipelines/quickstart.hcl")
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	dir := t.TempDir()
	inputs := [][]byte{{}, {0}, {0xff, 0xfe, 0x00, '{'}, []byte("pipeline"), []byte(`pipeline "x" {`), []byte("}}}}"), []byte("\x00\x01pipeline \"p\" {}")}
	for i := 0; i < 16; i++ {
		b := append([]byte(nil), seed...)
		for j := 0; j < 1+rng.IntN(8); j++ {
			p := rng.IntN(len(b))
			switch rng.IntN(3) {
			case 0:
				b[p] = byte(rng.IntN(256))
			case 1:
				b = append(b[:p], b[min(len(b), p+rng.IntN(40)):]...)
			default:
				b = append(b[:p], append([]byte("${}[{\"=#"), b[p:]...)...)
			}
		}
		inputs = append(inputs, b)
	}
	for i, in := range inputs {
		file := filepath.Join(dir, fmt.Sprintf("in%02d.hcl", i))
		if err := os.WriteFile(file, in, 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "validate", file)
		var se bytes.Buffer
		cmd.Stderr = &se
		err := cmd.Run()
		out := se.String()
		if strings.Contains(out, "panic") || strings.Contains(out, "goroutine ") {
			t.Fatalf("input %d: validate crashed:\n%s", i, out)
		}
		if err == nil {
			continue // a mutation can leave the file valid
		}
		var ee *exec.ExitError
		if !errorsAs(err, &ee) || ee.ExitCode() != 1 {
			t.Errorf("input %d: exit %v, want 1", i, err)
		}
		first := strings.SplitN(out, "\n", 2)[0]
		if !locRe.MatchString(strings.TrimPrefix(first, dir+"/")) && !strings.HasPrefix(first, file) {
			t.Errorf("input %d: first line %q is not FILE:LINE,COL: Summary", i, first)
		}
	}
}

// TestValidateReportsEveryError checks the contract format and that several
// mistakes are reported in one go.
func TestValidateReportsEveryError(t *testing.T) {
	file := filepath.Join(t.TempDir(), "bad.hcl")
	src := `pipeline "p" {}
step "load" "main" {
  target     = "http://127.0.0.1:1/"
  conections = 10
}
servce "x" {}
`
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "validate", file).CombinedOutput()
	if err == nil {
		t.Fatal("validate accepted an invalid pipeline")
	}
	s := string(out)
	for _, want := range []string{
		file + ":4,3: Unsupported argument",
		`Did you mean "connections"?`,
		"4 |   conections = 10",
		file + ":6,1: Unsupported block type",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
	jout, _ := exec.Command(bin, "validate", "--json", file).Output()
	var j struct {
		Valid       bool `json:"valid"`
		Diagnostics []struct {
			Summary string `json:"summary"`
			Range   struct {
				StartLine int `json:"start_line"`
			} `json:"range"`
		} `json:"diagnostics"`
	}
	if err := json.Unmarshal(jout, &j); err != nil {
		t.Fatalf("--json output: %v\n%s", err, jout)
	}
	if j.Valid || len(j.Diagnostics) < 2 || j.Diagnostics[0].Range.StartLine == 0 {
		t.Errorf("json diagnostics: %+v", j)
	}
}
