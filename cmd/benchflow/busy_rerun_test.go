package main

import (
	"bufio"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// TestBusyTrialIsRerun runs a real study while a second process (not
// benchflow's, a CPU-bound shell loop the test starts) keeps a core busy
// during exactly one trial: that trial is run again, its busy attempt
// stays in the tables flagged discarded, and the report's cell is made
// of the three attempts that count. On a machine that is busy anyway
// (make test runs packages side by side) other trials may be re-run too:
// the test asserts what the busy period caused, and that every discarded
// attempt is out of the estimates.
func TestBusyTrialIsRerun(t *testing.T) {
	dir := t.TempDir()
	pipe := filepath.Join(dir, "busy.hcl")
	if err := os.WriteFile(pipe, []byte(`
pipeline "busy" {
  repetitions  = 3
  busy_rerun   = 2
  busy_give_up = 0
}
provider "local" "host" {}
service "web" {
  provider = "host"
  command  = [benchflow.bin, "serve", "--addr", "127.0.0.1:${self.port.http}"]
  port "http" {}
  health {
    http = "/"
  }
}
step "load" "main" {
  target      = "${service.web.url}/"
  connections = 2
  threads     = 1
  duration    = "1s"
}
step "collect" "cpu" {
  during   = step.load.main
  interval = "250ms"
}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	cmd := exec.Command(bin, "apply", pipe, "--out", out, "-v")
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var burner *exec.Cmd
	stopBurner := func() {
		mu.Lock()
		defer mu.Unlock()
		if burner != nil && burner.Process != nil {
			syscall.Kill(-burner.Process.Pid, syscall.SIGKILL)
			burner.Wait()
		}
		burner = nil
	}
	defer stopBurner()
	var log strings.Builder
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			line := sc.Text()
			log.WriteString(line + "\n")
			switch {
			case strings.Contains(line, "trial c01-r2") && strings.HasSuffix(line, ": started") && !strings.Contains(log.String(), "c01-r2-a1"):
				mu.Lock()
				if burner == nil {
					burner = exec.Command("sh", "-c", "while :; do :; done")
					burner.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
					if err := burner.Start(); err != nil {
						t.Error(err)
					}
				}
				mu.Unlock()
			case strings.Contains(line, "trial c01-r2: ") && strings.Contains(line, "running it again"):
				stopBurner()
			}
		}
	}()
	err := cmd.Wait()
	pw.Close()
	<-done
	stopBurner()
	if err != nil {
		t.Fatalf("apply: %v\n%s", err, log.String())
	}
	latest := filepath.Join(out, "latest")
	var m struct {
		Trials []struct {
			TrialID string `json:"trial_id"`
			Status  string `json:"status"`
			Attempt int    `json:"attempt"`
		} `json:"trials"`
		Discarded []struct {
			TrialID   string `json:"trial_id"`
			Attempt   int    `json:"attempt"`
			Discarded string `json:"discarded"`
		} `json:"discarded"`
	}
	b, err := os.ReadFile(filepath.Join(latest, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, tr := range m.Trials {
		ids = append(ids, tr.TrialID)
		if tr.Status != "ok" {
			t.Errorf("trial %s: %s", tr.TrialID, tr.Status)
		}
	}
	if strings.Join(ids, " ") != "c01-r1 c01-r2 c01-r3" {
		t.Fatalf("manifest trials %v, want the three planned ones (discarded attempts are listed apart)\n%s", ids, log.String())
	}
	busy := false
	for _, d := range m.Discarded {
		if d.Discarded == "" || !strings.HasPrefix(d.TrialID, "c01-r") || !strings.Contains(d.TrialID, "-a") {
			t.Errorf("discarded entry %+v", d)
		}
		if d.TrialID == "c01-r2-a1" && (strings.HasPrefix(d.Discarded, "busy start") || strings.HasPrefix(d.Discarded, "noisy")) {
			busy = true
		}
	}
	if !busy {
		t.Fatalf("the trial run while a core was kept busy was not re-run: discarded %+v\n%s", m.Discarded, log.String())
	}
	if !strings.Contains(log.String(), "busy attempt") {
		t.Errorf("apply's summary line does not count the re-runs:\n%s", log.String())
	}

	// The tables keep every attempt, flagged.
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var nDiscarded, nKept, keptR2Attempt int
	q := fmt.Sprintf(`SELECT count(*) FILTER (WHERE discarded), count(*) FILTER (WHERE NOT discarded),
		max(attempt) FILTER (WHERE trial_id = 'c01-r2') FROM read_parquet('%s') WHERE step = 'main'`, filepath.Join(latest, "trials.parquet"))
	if err := db.QueryRow(q).Scan(&nDiscarded, &nKept, &keptR2Attempt); err != nil {
		t.Fatal(err)
	}
	if nDiscarded != len(m.Discarded) || nKept != 3 || keptR2Attempt < 2 {
		t.Errorf("trials.parquet: %d discarded rows (manifest: %d), %d kept (want 3), c01-r2 counted at attempt %d (want ≥ 2)", nDiscarded, len(m.Discarded), nKept, keptR2Attempt)
	}

	// The report's estimate is made of the attempts that count.
	rb, err := exec.Command(bin, "report", latest, "--format", "json").Output()
	if err != nil {
		t.Fatalf("report: %v", err)
	}
	var rep struct {
		Trials  int      `json:"trials"`
		Notices []string `json:"notices"`
		Cells   []struct {
			N        int      `json:"n"`
			TrialIDs []string `json:"trial_ids"`
		} `json:"cells"`
	}
	if err := json.Unmarshal(rb, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Trials != 3 || len(rep.Cells) != 1 || rep.Cells[0].N != 3 || strings.Join(rep.Cells[0].TrialIDs, " ") != "c01-r1 c01-r2 c01-r3" {
		t.Errorf("report: %d trials, cells %+v; want one cell of c01-r1 c01-r2 c01-r3", rep.Trials, rep.Cells)
	}
	if n := strings.Join(rep.Notices, "\n"); !strings.Contains(n, "c01-r2-a1 (") || !strings.Contains(n, "left out of every estimate") {
		t.Errorf("report notices do not say what was re-run:\n%s", n)
	}
}

// TestBusyRerunsGiveUp runs a study while two CPU-bound loops the test
// starts keep both cores busy the whole time: after busy_give_up (2)
// busy attempts in a row benchflow stops re-running, says so once, and
// keeps the busy trials, flagged; it prints one line per trial, each with
// that attempt's own time. The loops' command lines hold a token: it is
// in no file of the run, of its bundle, of its reports or exports, nor on
// the console (another's processes are named by program name only).
func TestBusyRerunsGiveUp(t *testing.T) {
	dir := t.TempDir()
	pipe := filepath.Join(dir, "busy.hcl")
	if err := os.WriteFile(pipe, []byte(`
pipeline "busy" {
  repetitions  = 3
  busy_rerun   = 2
  busy_give_up = 2
}
provider "local" "host" {}
service "web" {
  provider = "host"
  command  = [benchflow.bin, "serve", "--addr", "127.0.0.1:${self.port.http}"]
  port "http" {}
  health {
    http = "/"
  }
}
step "load" "main" {
  target      = "${service.web.url}/"
  connections = 2
  threads     = 1
  duration    = "1s"
}
step "collect" "cpu" {
  during   = step.load.main
  interval = "250ms"
}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	const secret = "tok3nS3cretXyz"
	for range 2 {
		burner := exec.Command("sh", "-c", "while :; do :; done", "burner", "--token="+secret)
		burner.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := burner.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() {
			syscall.Kill(-burner.Process.Pid, syscall.SIGKILL)
			burner.Wait()
		}()
	}
	out := filepath.Join(dir, "out")
	b, err := exec.Command(bin, "apply", pipe, "--out", out).CombinedOutput()
	log := string(b)
	if err != nil {
		t.Fatalf("apply: %v\n%s", err, log)
	}
	var trialLines []string
	for _, l := range strings.Split(log, "\n") {
		if strings.HasPrefix(l, "[") && strings.Contains(l, "] trial ") {
			trialLines = append(trialLines, l)
		}
	}
	if len(trialLines) != 3 {
		t.Errorf("%d trial lines, want one per trial (3):\n%s", len(trialLines), log)
	}
	if n := strings.Count(log, "no longer run again"); n != 1 {
		t.Fatalf("the notice that re-runs stopped appears %d times, want once:\n%s", n, log)
	}
	if n := strings.Count(log, "warning:"); n > 1+3 {
		t.Errorf("%d warnings for 3 trials, want at most the notice and one per trial:\n%s", n, log)
	}
	m, err := os.ReadFile(filepath.Join(out, "latest", "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var man struct {
		Discarded []struct {
			TrialID string `json:"trial_id"`
		} `json:"discarded"`
	}
	if err := json.Unmarshal(m, &man); err != nil {
		t.Fatal(err)
	}
	// Two busy attempts in a row stop the re-runs: at most one attempt
	// of the first busy trial is discarded, none after (an attempt the
	// scheduler happened to leave quiet restarts the count, so the test
	// allows the few a quiet moment adds, not busy_rerun per trial).
	if len(man.Discarded) == 0 || len(man.Discarded) >= 3*2 {
		t.Errorf("%d discarded attempts %v, want between 1 and 5 (re-runs stop after 2 busy in a row)", len(man.Discarded), man.Discarded)
	}
	if !strings.Contains(log, "still busy") && !strings.Contains(log, "kept flagged") {
		t.Errorf("no trial says it was kept flagged:\n%s", log)
	}
	for _, l := range trialLines {
		if strings.Contains(l, "attempt") && !strings.Contains(l, " of ") {
			t.Errorf("trial line %q", l)
		}
	}
	checkNoSecret(t, secret, out, log)
}

// checkNoSecret fails when secret is in the console output, in a file of
// the runs under out (Parquet tables read cell by cell), in the bundle
// publish makes of the latest, or in what report and export print.
func checkNoSecret(t *testing.T, secret, out, console string) {
	t.Helper()
	if strings.Contains(console, secret) {
		t.Errorf("the console shows another process's command line:\n%s", console)
	}
	latest := filepath.Join(out, "latest")
	bundleDir := filepath.Join(t.TempDir(), "bundle")
	if b, err := exec.Command(bin, "publish", latest, bundleDir).CombinedOutput(); err != nil {
		t.Fatalf("publish: %v\n%s", err, b)
	}
	for _, args := range [][]string{
		{"report", latest}, {"report", latest, "--format", "markdown"},
		{"report", latest, "--format", "csv"}, {"report", latest, "--format", "json"},
		{"export", latest, "--all-attempts"}, {"export", latest, "--table", "processes"},
	} {
		b, err := exec.Command(bin, args...).CombinedOutput()
		if err != nil {
			t.Errorf("%v: %v\n%s", args, err, b)
		}
		if strings.Contains(string(b), secret) {
			t.Errorf("%v prints another process's command line", args)
		}
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	files := 0
	for _, root := range []string{out, bundleDir} {
		err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || d.Type()&os.ModeSymlink != 0 {
				return err
			}
			files++
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if strings.Contains(string(b), secret) {
				t.Errorf("%s holds another process's command line", p)
			}
			if !strings.HasSuffix(p, ".parquet") {
				return nil
			}
			rows, err := db.Query(fmt.Sprintf("SELECT * FROM read_parquet('%s')", p))
			if err != nil {
				return err
			}
			defer rows.Close()
			cols, _ := rows.Columns()
			for rows.Next() {
				vals := make([]any, len(cols))
				ptrs := make([]any, len(cols))
				for i := range vals {
					ptrs[i] = &vals[i]
				}
				if err := rows.Scan(ptrs...); err != nil {
					return err
				}
				for i, v := range vals {
					if strings.Contains(fmt.Sprint(v), secret) {
						t.Errorf("%s: column %s holds another process's command line: %v", p, cols[i], v)
					}
				}
			}
			return rows.Err()
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if files < 5 {
		t.Errorf("only %d files checked", files)
	}
}
