package bundle

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSnapshotSwap: a file swapped in the bundle after Verify passed, at
// the moment Snapshot copies the folder, cannot reach what runs — either
// the copy has what was checked, or Verify of the copy refuses it.
func TestSnapshotSwap(t *testing.T) {
	dir := writeBundle(t, map[string]string{"pipeline.hcl": "checked\n", "manifest.json": "{}\n"})
	if _, err := Verify(dir); err != nil {
		t.Fatal(err)
	}
	// Swap every file right after it is copied (the copy has the checked
	// content), and the pipeline before it is copied (the copy has the
	// swapped content, and Verify of the copy must refuse it).
	defer func() { snapshotHook = nil }()
	snapshotHook = func(p string) {
		os.WriteFile(p, []byte("swapped after copy\n"), 0o644)
		if filepath.Base(p) == "manifest.json" {
			os.WriteFile(filepath.Join(dir, "pipeline.hcl"), []byte("swapped before copy\n"), 0o644)
		}
	}
	into := filepath.Join(t.TempDir(), "copy")
	if err := Snapshot(dir, into, 0); err != nil {
		t.Fatal(err)
	}
	_, err := Verify(into)
	b, _ := os.ReadFile(filepath.Join(into, "pipeline.hcl"))
	m, _ := os.ReadFile(filepath.Join(into, "manifest.json"))
	if string(m) != "{}\n" {
		t.Errorf("manifest.json copied as %q, want what was checked", m)
	}
	switch string(b) {
	case "checked\n":
	case "swapped before copy\n":
		if err == nil || !strings.Contains(err.Error(), "pipeline.hcl") {
			t.Errorf("the copy holds a swapped pipeline, and Verify of it said %v", err)
		}
	default:
		t.Errorf("pipeline.hcl copied as %q", b)
	}
	if fi, err := os.Stat(into); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("the copy's folder: %v %v, want mode 0700", fi.Mode(), err)
	}

	// A symbolic link (to a file of the reader's) is refused, named.
	os.Remove(filepath.Join(dir, "pipeline.hcl"))
	os.Symlink("/etc/hostname", filepath.Join(dir, "pipeline.hcl"))
	snapshotHook = nil
	if err := Snapshot(dir, filepath.Join(t.TempDir(), "copy"), 0); err == nil || !strings.Contains(err.Error(), "pipeline.hcl") {
		t.Errorf("a symlink in the bundle: %v", err)
	}
}
