package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchflow/benchflow/engine/scratch"
	"github.com/benchflow/benchflow/engine/scratch/scratchtest"
)

// The cleanup rule, end to end: benchflow deletes only what it recorded
// creating, and never through a symlink (issue 38 §1, issue 39 §3).

const quickPipeline = `
pipeline "quick" {}
step "exec" "x" { command = ["true"] }
`

// cleanupEnv is a folder with quick.hcl, the state folder its commands
// use, and a finished run of it in res/.
func cleanupEnv(t *testing.T) (dir, run string, env []string) {
	t.Helper()
	dir = t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "quick.hcl"), []byte(quickPipeline), 0o644); err != nil {
		t.Fatal(err)
	}
	env = gcTestEnv(dir)
	t.Setenv("BENCHFLOW_STATE_DIR", filepath.Join(dir, "state")) // this process's records too
	cleanupRun(t, dir, env, "apply", "quick.hcl", "--out", "res", "-q")
	runs, _ := filepath.Glob(filepath.Join(dir, "res", "2*"))
	if len(runs) != 1 {
		t.Fatalf("runs: %v", runs)
	}
	return dir, runs[0], env
}

func cleanupRun(t *testing.T, dir string, env []string, args ...string) string {
	t.Helper()
	out, err := cleanupTry(dir, env, args...)
	if err != nil {
		t.Fatalf("benchflow %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func cleanupTry(dir string, env []string, args ...string) (string, error) {
	cmd := exec.Command(bin, args...)
	cmd.Dir, cmd.Env = dir, env
	b, err := cmd.CombinedOutput()
	return string(b), err
}

func cleanupFile(t *testing.T, p, content string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func cleanupLink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// userFolder is issue 38's U: a folder of the user's holding names shaped
// like benchflow's, with what each must still hold.
func userFolder(t *testing.T, dir string) (string, map[string]string) {
	u := filepath.Join(dir, "U")
	files := map[string]string{
		filepath.Join(u, ".staging-42", "important.txt"): "precious\n",
		filepath.Join(u, ".notes.tmp-7"):                 "n\n",
		filepath.Join(u, ".d", ".staging-8", "deep.txt"): "deep\n",
		filepath.Join(u, ".trials.parquet.tmp-9"):        "mine\n",
	}
	for p, c := range files {
		cleanupFile(t, p, c)
	}
	return u, files
}

func checkUser(t *testing.T, what string, files map[string]string) {
	t.Helper()
	for p, want := range files {
		if b, err := os.ReadFile(p); err != nil || string(b) != want {
			t.Errorf("after %s the user's %s holds %q (%v), want %q", what, p, b, err, want)
		}
	}
}

// checkLeft: out names each path as left alone with its reason (paths as
// the command was given them: below res/ in the test's folder dir).
func checkLeft(t *testing.T, dir, what, out string, left map[string]string) {
	t.Helper()
	out = strings.ReplaceAll(out, " res/", " "+filepath.Join(dir, "res")+"/")
	for p, why := range left {
		line := "left alone " + p + ": "
		i := strings.Index(out, line)
		if i < 0 {
			t.Errorf("%s does not report %s as left alone:\n%s", what, p, out)
			continue
		}
		rest := out[i+len(line):]
		if j := strings.IndexByte(rest, '\n'); j >= 0 {
			rest = rest[:j]
		}
		if !strings.Contains(rest, why) {
			t.Errorf("%s leaves %s alone because %q, want %q", what, p, rest, why)
		}
	}
}

// TestCleanupNeverThroughASymlink: issue 38's case exactly (parts/ of a
// run a symlink to the user's folder, then gc -o), then with a killed
// writer's records naming what is behind the link, and the variants — a
// symlink at a recorded staging folder inside a real parts/, a symlink a
// level deeper, a regular file where a folder was recorded, a leftover the
// journal does not name — for gc, apply --resume, apply --out and
// compact: the user's files survive, each recorded path left alone is
// reported with why, and what is exactly as recorded is removed.
func TestCleanupNeverThroughASymlink(t *testing.T) {
	dir, run, env := cleanupEnv(t)
	u, files := userFolder(t, dir)
	parts := filepath.Join(run, "parts")

	// Issue 38's commands, as given.
	cleanupLink(t, u, parts)
	out := cleanupRun(t, dir, env, "gc", "-o", "res", "--provider", "local")
	checkUser(t, "gc -o res", files)
	if strings.Contains(out, "removed") && !strings.Contains(out, "0 leftover(s) removed") {
		t.Errorf("gc removed something:\n%s", out)
	}

	j := scratch.Run(run)
	type rec struct {
		path string
		kind scratch.Kind
		why  string // "" when it is removed
	}
	setup := func() []rec {
		t.Helper()
		// parts/ a symlink to U: records naming what is behind it.
		os.Remove(parts)
		os.RemoveAll(filepath.Join(run, "logs2"))
		cleanupLink(t, u, parts)
		recs := []rec{
			{filepath.Join(parts, ".staging-42"), scratch.Dir, parts + " is a symlink (benchflow never deletes through one)"},
			{filepath.Join(parts, ".notes.tmp-7"), scratch.File, parts + " is a symlink"},
			{filepath.Join(parts, ".d", ".staging-8"), scratch.Dir, parts + " is a symlink"},
		}
		// A real folder with a symlink at a recorded staging folder, one a
		// level deeper, a file where a folder was recorded.
		logs2 := filepath.Join(run, "logs2")
		if err := os.MkdirAll(logs2, 0o755); err != nil {
			t.Fatal(err)
		}
		cleanupLink(t, filepath.Join(u, ".staging-42"), filepath.Join(logs2, ".staging-5"))
		cleanupLink(t, filepath.Join(u, ".d"), filepath.Join(logs2, ".deeper"))
		cleanupFile(t, filepath.Join(logs2, ".staging-6"), "a file")
		recs = append(recs,
			rec{filepath.Join(logs2, ".staging-5"), scratch.Dir, "it is a symlink; benchflow recorded creating a folder"},
			rec{filepath.Join(logs2, ".deeper", ".staging-8"), scratch.Dir, filepath.Join(logs2, ".deeper") + " is a symlink"},
			rec{filepath.Join(logs2, ".staging-6"), scratch.Dir, "it is a file; benchflow recorded creating a folder"},
		)
		// Exactly as recorded: removed.
		cleanupFile(t, filepath.Join(run, ".staging-77", "trials.parquet"), "half")
		cleanupFile(t, filepath.Join(run, ".manifest.json.tmp-78"), "{")
		recs = append(recs,
			rec{filepath.Join(run, ".staging-77"), scratch.Dir, ""},
			rec{filepath.Join(run, ".manifest.json.tmp-78"), scratch.File, ""},
		)
		for _, r := range recs {
			scratchtest.RecordKilled(t, j, r.path, r.kind)
		}
		// Not in the journal: stays, unreported.
		cleanupFile(t, filepath.Join(run, ".staging-79", "f"), "not recorded")
		return recs
	}
	check := func(what, out string, recs []rec) {
		t.Helper()
		checkUser(t, what, files)
		left := map[string]string{}
		for _, r := range recs {
			_, err := os.Lstat(r.path)
			if r.why == "" {
				if err == nil {
					t.Errorf("%s left %s, recorded and exactly as recorded", what, r.path)
				}
				continue
			}
			left[r.path] = r.why
		}
		checkLeft(t, dir, what, out, left)
		if _, err := os.Stat(filepath.Join(run, ".staging-79", "f")); err != nil || strings.Contains(out, ".staging-79") {
			t.Errorf("%s touched or named a leftover the journal does not name (%v):\n%s", what, err, out)
		}
		if _, err := os.Lstat(j.Path()); err == nil {
			t.Errorf("%s kept the journal with nothing of a live process in it", what)
		}
	}

	recs := setup()
	out = cleanupRun(t, dir, env, "gc", "-o", "res", "--provider", "local")
	check("gc -o", out, recs)
	if !strings.Contains(out, "removed unfinished results file: "+filepath.Join("res", filepath.Base(run), ".staging-77")) {
		t.Errorf("gc does not say what it removed:\n%s", out)
	}

	recs = setup()
	out = cleanupRun(t, dir, env, "apply", "quick.hcl", "--resume", run)
	check("apply --resume", out, recs)

	recs = setup()
	out = cleanupRun(t, dir, env, "apply", "quick.hcl", "--out", "res")
	check("apply --out", out, recs)

	recs = setup()
	out, _ = cleanupTry(dir, env, "compact", run)
	check("compact", out, recs)
}

// TestCleanupOutputDir: a pipeline's output { dir } is cleaned by the same
// rule when apply runs it.
func TestCleanupOutputDir(t *testing.T) {
	dir, run, env := cleanupEnv(t)
	u, files := userFolder(t, dir)
	if err := os.WriteFile(filepath.Join(dir, "out.hcl"), []byte(`
pipeline "quick" {}
output { dir = "res" }
step "exec" "x" { command = ["true"] }
`), 0o644); err != nil {
		t.Fatal(err)
	}
	parts := filepath.Join(run, "parts")
	cleanupLink(t, u, parts)
	scratchtest.RecordKilled(t, scratch.Run(run), filepath.Join(parts, ".staging-42"), scratch.Dir)
	out := cleanupRun(t, dir, env, "apply", "out.hcl")
	checkUser(t, "apply with output { dir }", files)
	checkLeft(t, dir, "apply with output { dir }", out, map[string]string{filepath.Join(parts, ".staging-42"): parts + " is a symlink"})
}

// TestPublishCleanupRule: publish refuses a bundle folder that reaches
// into the run through a symlink; --force replaces only a folder of the
// bundle's own files and never through a symlink; --logs never copies an
// earlier bundle; a killed publish's staging folder and a killed
// reproduce's temporary folder (recorded, their process gone) are removed
// by gc, and a later publish does not trip on them; a live process's stay.
func TestPublishCleanupRule(t *testing.T) {
	dir, run, env := cleanupEnv(t)
	u, files := userFolder(t, dir)

	// ln -s RUN/logs l; publish RUN l/b
	cleanupLink(t, filepath.Join(run, "logs"), filepath.Join(dir, "l"))
	out, err := cleanupTry(dir, env, "publish", run, "l/b")
	if err == nil || !strings.Contains(out, "inside the run folder") {
		t.Errorf("publish into the run through a symlink: %v\n%s", err, out)
	}
	if _, err := os.Lstat(filepath.Join(run, "logs", "b")); err == nil {
		t.Error("publish wrote into the run folder")
	}
	if m, _ := filepath.Glob(filepath.Join(run, "logs", ".b.tmp-*")); len(m) > 0 {
		t.Errorf("publish left %v in the run folder", m)
	}

	// --force: a bundle holding a symlink, a file it does not list, a
	// bundle folder that is a symlink.
	cleanupRun(t, dir, env, "publish", run, "b")
	cleanupLink(t, u, filepath.Join(dir, "b", "sources-link"))
	out, err = cleanupTry(dir, env, "publish", "--force", run, "b")
	if err == nil || !strings.Contains(out, "is a symlink") {
		t.Errorf("publish --force over a bundle holding a symlink: %v\n%s", err, out)
	}
	checkUser(t, "publish --force", files)
	os.Remove(filepath.Join(dir, "b", "sources-link"))
	// A level deeper, and a symlink where the bundle has a file.
	if err := os.MkdirAll(filepath.Join(dir, "b", "deep", "er"), 0o755); err != nil {
		t.Fatal(err)
	}
	cleanupLink(t, filepath.Join(u, ".staging-42"), filepath.Join(dir, "b", "deep", "er", ".staging-1"))
	out, err = cleanupTry(dir, env, "publish", "--force", run, "b")
	if err == nil || !strings.Contains(out, "is a symlink") {
		t.Errorf("publish --force over a bundle holding a deeper symlink: %v\n%s", err, out)
	}
	checkUser(t, "publish --force", files)
	os.RemoveAll(filepath.Join(dir, "b", "deep"))
	pipeline := filepath.Join(dir, "b", "pipeline.hcl")
	os.Rename(pipeline, pipeline+".bak")
	cleanupLink(t, filepath.Join(u, ".notes.tmp-7"), pipeline)
	out, err = cleanupTry(dir, env, "publish", "--force", run, "b")
	if err == nil || !strings.Contains(out, "is a symlink") {
		t.Errorf("publish --force over a bundle whose file is a symlink: %v\n%s", err, out)
	}
	checkUser(t, "publish --force", files)
	os.Remove(pipeline)
	os.Rename(pipeline+".bak", pipeline)
	notes := cleanupFile(t, filepath.Join(dir, "b", "notes.txt"), "mine")
	out, err = cleanupTry(dir, env, "publish", "--force", run, "b")
	if err == nil || !strings.Contains(out, "not one of the bundle's files") {
		t.Errorf("publish --force over a bundle with a file of the user's: %v\n%s", err, out)
	}
	if _, err := os.Stat(notes); err != nil {
		t.Errorf("publish --force removed %s", notes)
	}
	os.Remove(notes)
	cleanupLink(t, u, filepath.Join(dir, "ub"))
	cleanupFile(t, filepath.Join(u, "SHA256SUMS"), "")
	files[filepath.Join(u, "SHA256SUMS")] = ""
	out, err = cleanupTry(dir, env, "publish", "--force", run, "ub")
	if err == nil || !strings.Contains(out, "is a symlink") {
		t.Errorf("publish --force to a symlink: %v\n%s", err, out)
	}
	checkUser(t, "publish --force to a symlink", files)

	// A killed publish's staging folder beside b and a killed reproduce's
	// temporary folder; a later publish --force does not trip on them.
	mach := scratch.Machine()
	stage := cleanupFile(t, filepath.Join(dir, ".b.tmp-123", "manifest.json"), "{}")
	stage = filepath.Dir(stage)
	repro := filepath.Dir(filepath.Dir(cleanupFile(t, filepath.Join(dir, "tmp", "benchflow-reproduce-456", "pipeline", "quick.hcl"), quickPipeline)))
	scratchtest.RecordKilled(t, mach, stage, scratch.Dir)
	scratchtest.RecordKilled(t, mach, repro, scratch.Dir)
	// Unrecorded, the same shapes: never removed.
	unrecorded := []string{
		filepath.Dir(cleanupFile(t, filepath.Join(dir, ".b.tmp-124", "x"), "mine")),
		filepath.Dir(cleanupFile(t, filepath.Join(dir, "tmp", "benchflow-reproduce-457", "x"), "mine")),
	}
	// A live process's (this test's): kept.
	live, done, err := func() (string, func(), error) {
		d, r, err := mach.MkdirTemp(filepath.Join(dir, "tmp"), "benchflow-reproduce-", 0o700)
		return d, r.Done, err
	}()
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	cleanupRun(t, dir, env, "publish", "--force", run, "b")
	out = cleanupRun(t, dir, env, "gc", "--provider", "local", "-o", "res")
	for _, p := range []string{stage, repro} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("gc left %s", p)
		}
		if !strings.Contains(out, "removed what a killed benchflow left: "+p) {
			t.Errorf("gc does not name %s:\n%s", p, out)
		}
	}
	for _, p := range append(unrecorded, live) {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("gc removed %s", p)
		}
	}

	// --logs: a bundle that an older version published into the run's
	// logs is not copied into a new one.
	old := filepath.Join(run, "logs", "old-bundle")
	if err := os.Rename(filepath.Join(dir, "b"), old); err != nil {
		t.Fatal(err)
	}
	out = cleanupRun(t, dir, env, "publish", "--logs", run, "b2")
	if _, err := os.Stat(filepath.Join(dir, "b2", "logs", "old-bundle")); err == nil {
		t.Error("publish --logs copied an earlier bundle into the new one")
	}
	if !strings.Contains(out, "logs/old-bundle") {
		t.Errorf("publish does not say it left the earlier bundle out:\n%s", out)
	}
	if ents, _ := os.ReadDir(filepath.Join(dir, "b2", "logs")); len(ents) == 0 {
		t.Error("publish --logs copied no logs")
	}
}
