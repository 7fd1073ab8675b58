package scratch_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/benchflow/benchflow/engine/scratch"
	"github.com/benchflow/benchflow/engine/scratch/scratchtest"
)

func mkfile(t *testing.T, p string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("the user's"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func mkdir(t *testing.T, p string) string {
	t.Helper()
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func symlink(t *testing.T, target, link string) string {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	return link
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// leftFor is the reason Clean gave for leaving p alone ("" when it did not).
func leftFor(r *scratch.Report, p string) string {
	for _, l := range r.Left {
		if l.Path == p {
			return l.Why
		}
	}
	return ""
}

// TestCleanRemovesOnlyWhatIsRecorded: of a killed writer's records, Clean
// removes exactly the recorded paths that are what the record says, never
// through a symlink at any depth; the rest — a symlink at the recorded
// path, at a folder on its way (one or several levels up), a file where a
// folder was recorded, another folder put in its place, nothing there,
// forged records that leave the root or name what benchflow does not make
// — is left alone and reported. Unrecorded paths of benchflow's names stay,
// a live process's records stay recorded, and a symlink inside a removed
// staging folder goes without its target.
func TestCleanRemovesOnlyWhatIsRecorded(t *testing.T) {
	root := t.TempDir()
	run := mkdir(t, filepath.Join(root, "run"))
	user := mkdir(t, filepath.Join(root, "U"))
	j := scratch.Run(run)
	dead := func(p string, k scratch.Kind) string {
		scratchtest.RecordKilled(t, j, p, k)
		return p
	}

	// Recorded and exactly as recorded: removed.
	stage := dead(mkdir(t, filepath.Join(run, "parts", ".staging-1")), scratch.Dir)
	mkfile(t, filepath.Join(stage, "trials.parquet"))
	mkfile(t, filepath.Join(stage, "deep", "er", "f"))
	target := mkfile(t, filepath.Join(user, "linked", "precious.txt"))
	symlink(t, filepath.Dir(target), filepath.Join(stage, "link"))
	symlink(t, target, filepath.Join(stage, "deep", "filelink"))
	tmp := dead(mkfile(t, filepath.Join(run, ".manifest.json.tmp-2")), scratch.File)
	src := dead(mkfile(t, filepath.Join(run, "sources", "lib", ".x.star.tmp-3")), scratch.File)
	// Recorded before it was made (no inode), then made: removed.
	late := filepath.Join(run, ".staging-4")
	dead(late, scratch.Dir)
	mkdir(t, late)

	// The user's files behind symlinks, named like benchflow's.
	mkfile(t, filepath.Join(user, ".staging-42", "important.txt"))
	mkfile(t, filepath.Join(user, ".notes.tmp-7"))
	mkfile(t, filepath.Join(user, "deeper", ".staging-5", "f"))
	symlink(t, user, filepath.Join(run, "logs"))
	viaLink := dead(filepath.Join(run, "logs", ".staging-42"), scratch.Dir)
	viaLinkFile := dead(filepath.Join(run, "logs", ".notes.tmp-7"), scratch.File)
	mkdir(t, filepath.Join(run, "a"))
	symlink(t, user, filepath.Join(run, "a", "b"))
	deep := dead(filepath.Join(run, "a", "b", "deeper", ".staging-5"), scratch.Dir)
	// A symlink at the recorded path itself.
	atPath := dead(symlink(t, filepath.Join(user, ".staging-42"), filepath.Join(run, "parts", ".staging-6")), scratch.Dir)
	atPathFile := dead(symlink(t, filepath.Join(user, ".notes.tmp-7"), filepath.Join(run, ".trials.parquet.tmp-8")), scratch.File)
	// Another kind of file than recorded.
	fileForDir := dead(mkfile(t, filepath.Join(run, "parts", ".staging-9")), scratch.Dir)
	dirForFile := dead(mkdir(t, filepath.Join(run, ".report.md.tmp-10")), scratch.File)
	mkfile(t, filepath.Join(dirForFile, "kept"))
	// Recorded with its inode, then replaced by another folder.
	replaced := dead(mkdir(t, filepath.Join(run, ".staging-11")), scratch.Dir)
	if err := os.Remove(replaced); err != nil {
		t.Fatal(err)
	}
	mkfile(t, filepath.Join(replaced, "someone else's"))
	// Nothing there.
	missing := dead(filepath.Join(run, ".staging-12"), scratch.Dir)
	// Forged records: outside the root, not benchflow's names.
	outside := mkfile(t, filepath.Join(root, ".outside.tmp-1"))
	if err := j.RecordFor(scratchtest.DeadOwner(t), outside, scratch.File, ""); err == nil {
		t.Errorf("a path outside the run folder was recorded")
	}
	// A journal edited by hand: lines naming the run's own files and
	// paths that leave it.
	manifest := mkfile(t, filepath.Join(run, "manifest.json"))
	ob, _ := json.Marshal(scratchtest.DeadOwner(t))
	f, err := os.OpenFile(j.Path(), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"manifest.json", "../.outside.tmp-1", outside, "parts/../../.outside.tmp-1"} {
		fmt.Fprintf(f, `{"op":"make","kind":"file","path":%q,"owner":%s}`+"\n", p, ob)
	}
	f.WriteString("not json\n")
	f.Close()

	// Not recorded, benchflow's names: stay.
	unrecorded := []string{
		mkfile(t, filepath.Join(run, ".staging-13", "f")),
		mkfile(t, filepath.Join(run, ".manifest.json.tmp-14")),
		mkfile(t, filepath.Join(run, "parts", ".staging-15-old", "trial.json")),
	}
	// A live process's record (this one's): stays, and stays recorded.
	liveDir, liveRec, err := j.MkdirTemp(filepath.Join(run, "parts"), ".staging-", 0o700)
	if err != nil {
		t.Fatal(err)
	}

	r, err := j.Clean()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{stage, tmp, src, late} {
		if exists(p) {
			t.Errorf("recorded %s survives", p)
		}
	}
	want := []string{stage, tmp, src, late}
	slices.Sort(want)
	got := slices.Clone(r.Removed)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("Removed = %q\nwant %q", got, want)
	}
	for p, why := range map[string]string{
		viaLink:     filepath.Join(run, "logs") + " is a symlink",
		viaLinkFile: filepath.Join(run, "logs") + " is a symlink",
		deep:        filepath.Join(run, "a", "b") + " is a symlink",
		atPath:      "it is a symlink; benchflow recorded creating a folder",
		atPathFile:  "it is a symlink; benchflow recorded creating a file",
		fileForDir:  "it is a file; benchflow recorded creating a folder",
		dirForFile:  "it is a folder; benchflow recorded creating a file",
		replaced:    "not the folder benchflow made",
		missing:     "not there",
		manifest:    "not a name benchflow makes",
		filepath.Join(run, "..", ".outside.tmp-1"):                "not a path below",
		filepath.Join(run, outside):                               "not a path below",
		filepath.Join(run, "parts", "..", "..", ".outside.tmp-1"): "not a path below",
		j.Path(): "1 line(s) of the journal cannot be read",
	} {
		if got := leftFor(r, p); !strings.Contains(got, why) {
			t.Errorf("%s: left for %q, want %q", p, got, why)
		}
	}
	for _, p := range append(unrecorded, target, filepath.Join(user, ".staging-42", "important.txt"),
		filepath.Join(user, ".notes.tmp-7"), filepath.Join(user, "deeper", ".staging-5", "f"),
		atPath, atPathFile, fileForDir, filepath.Join(dirForFile, "kept"), filepath.Join(replaced, "someone else's"),
		manifest, outside, liveDir) {
		if !exists(p) {
			t.Errorf("%s was removed", p)
		}
	}

	// What was left alone is forgotten; the live record stays, and a
	// second pass does nothing.
	r, err = j.Clean()
	if err != nil || len(r.Removed)+len(r.Left) != 0 {
		t.Errorf("second Clean: %+v, %v", r, err)
	}
	if !exists(j.Path()) {
		t.Errorf("the live process's record was forgotten")
	}
	if err := os.Remove(liveDir); err != nil {
		t.Fatal(err)
	}
	liveRec.Done()
	if exists(j.Path()) {
		t.Errorf("a journal with nothing open stays: %s", j.Path())
	}
}

// TestWritesThroughTheJournal: MkdirTemp and CreateTemp record before they
// make, Done forgets, and a journal with nothing open is removed; a
// journal file that is a symlink is never written through.
func TestWritesThroughTheJournal(t *testing.T) {
	run := t.TempDir()
	j := scratch.Run(run)
	d, rd, err := j.MkdirTemp(run, ".staging-", 0o700)
	if err != nil {
		t.Fatal(err)
	}
	f, rf, err := j.CreateTemp(d, ".trials.parquet.tmp-")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if !strings.HasPrefix(filepath.Base(d), ".staging-") || !strings.HasPrefix(filepath.Base(f.Name()), ".trials.parquet.tmp-") {
		t.Errorf("names %s, %s", d, f.Name())
	}
	b, err := os.ReadFile(j.Path())
	if err != nil || !strings.Contains(string(b), `"path":"`+filepath.Base(d)+`"`) {
		t.Fatalf("journal %q, %v", b, err)
	}
	if err := os.RemoveAll(d); err != nil {
		t.Fatal(err)
	}
	rf.Done()
	if !exists(j.Path()) {
		t.Error("the journal went with an entry open")
	}
	rd.Done()
	if exists(j.Path()) {
		t.Error("the journal stays with nothing open")
	}

	other := t.TempDir()
	symlink(t, filepath.Join(other, "j"), j.Path())
	if _, _, err := j.MkdirTemp(run, ".staging-", 0o700); err == nil {
		t.Error("recorded through a symlinked journal")
	}
	if exists(filepath.Join(other, "j")) {
		t.Error("wrote the journal's link target")
	}
	if ents, _ := os.ReadDir(run); len(ents) != 1 {
		t.Errorf("a staging folder was made without its record: %v", ents)
	}
	if _, err := j.Clean(); err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Errorf("Clean of a symlinked journal: %v", err)
	}
}

// TestRestoreMovedAside: a part folder moved aside (recorded, before the
// rename, with where it goes back) is put back when nothing took its
// place, and removed when the new part is in place.
func TestRestoreMovedAside(t *testing.T) {
	run := t.TempDir()
	j := scratch.Run(run)
	owner := scratchtest.DeadOwner(t)
	record := func(trial string) (old, dst string) {
		dst = mkdir(t, filepath.Join(run, "parts", trial))
		mkfile(t, filepath.Join(dst, "trial.json"))
		old = filepath.Join(run, "parts", ".staging-"+trial+"0-old")
		if err := j.RecordFor(owner, old, scratch.Dir, dst); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(dst, old); err != nil {
			t.Fatal(err)
		}
		return old, dst
	}
	old1, dst1 := record("1")
	old2, dst2 := record("2")
	mkdir(t, dst2) // the new part got in place
	r, err := j.Clean()
	if err != nil {
		t.Fatal(err)
	}
	if exists(old1) || !exists(filepath.Join(dst1, "trial.json")) || !slices.Equal(r.Restored, []string{dst1}) {
		t.Errorf("the only copy was not put back: Restored %q", r.Restored)
	}
	if exists(old2) || !exists(dst2) || !slices.Equal(r.Removed, []string{old2}) {
		t.Errorf("the earlier part beside the new one: Removed %q", r.Removed)
	}
}

// TestMachineJournal: outside run folders, paths are recorded absolute
// with their folder resolved; a killed process's folder is removed, a
// live one's kept, and a folder reached through a symlink that was not
// there when it was recorded is left alone.
func TestMachineJournal(t *testing.T) {
	t.Setenv("BENCHFLOW_STATE_DIR", t.TempDir())
	j := scratch.Machine()
	tmp := t.TempDir()
	live, rec, err := j.MkdirTemp(tmp, "benchflow-reproduce-", 0o700)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Done()
	killed := mkdir(t, filepath.Join(tmp, "benchflow-reproduce-123"))
	mkfile(t, filepath.Join(killed, "pipeline", "p.hcl"))
	scratchtest.RecordKilled(t, j, killed, scratch.Dir)
	bundle := mkdir(t, filepath.Join(tmp, "pub", ".b.tmp-77"))
	scratchtest.RecordKilled(t, j, bundle, scratch.Dir)
	// pub becomes a link to the user's folder holding the same name.
	user := mkfile(t, filepath.Join(t.TempDir(), ".b.tmp-77", "mine"))
	if err := os.RemoveAll(filepath.Join(tmp, "pub")); err != nil {
		t.Fatal(err)
	}
	symlink(t, filepath.Dir(filepath.Dir(user)), filepath.Join(tmp, "pub"))
	r, err := j.Clean()
	if err != nil {
		t.Fatal(err)
	}
	if exists(killed) || !slices.Equal(r.Removed, []string{killed}) {
		t.Errorf("Removed %q", r.Removed)
	}
	if !exists(live) || !exists(user) {
		t.Errorf("removed the live folder (%v) or the user's file (%v)", !exists(live), !exists(user))
	}
	if why := leftFor(r, bundle); !strings.Contains(why, "is a symlink") {
		t.Errorf("left %+v", r.Left)
	}
}

// TestRemoveTree: never through a symlink, at the path or on its way.
func TestRemoveTree(t *testing.T) {
	run := t.TempDir()
	user := mkfile(t, filepath.Join(t.TempDir(), "t1", "f"))
	symlink(t, filepath.Dir(filepath.Dir(user)), filepath.Join(run, "parts"))
	if err := scratch.RemoveTree(run, "parts/t1"); err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Errorf("RemoveTree through a symlink: %v", err)
	}
	if !exists(user) {
		t.Error("removed through a symlink")
	}
	in := mkfile(t, filepath.Join(run, "p2", "t2", "f"))
	symlink(t, user, filepath.Join(run, "p2", "t2", "link"))
	if err := scratch.RemoveTree(run, "p2/t2"); err != nil || exists(filepath.Dir(in)) || !exists(user) {
		t.Errorf("RemoveTree: %v", err)
	}
	_ = errors.New
}

// TestMachineJournalUnwritable: with no writable state folder, a path
// outside run folders is still made (unrecorded: no cleanup will ever
// remove it), and a run folder's journal that cannot be written refuses.
func TestMachineJournalUnwritable(t *testing.T) {
	state := mkfile(t, filepath.Join(t.TempDir(), "state")) // a file: no folder can be made there
	t.Setenv("BENCHFLOW_STATE_DIR", state)
	d, rec, err := scratch.Machine().MkdirTemp(t.TempDir(), "benchflow-reproduce-", 0o700)
	if err != nil || !exists(d) {
		t.Fatalf("MkdirTemp without a state folder: %v", err)
	}
	rec.Done()
	run := t.TempDir()
	mkdir(t, filepath.Join(run, scratch.RunJournalFile)) // not a file
	if _, _, err := scratch.Run(run).MkdirTemp(run, ".staging-", 0o700); err == nil {
		t.Error("made a staging folder it could not record")
	}
}
