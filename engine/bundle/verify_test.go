package bundle

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchflow/benchflow/engine/results"
)

func writeBundle(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	list, err := listFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := writeSums(dir, list); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestVerify: an intact bundle verifies; one changed byte, a missing file
// and an unlisted file are each named; a bundle without SHA256SUMS and a
// malformed line are refused with the reason.
func TestVerify(t *testing.T) {
	files := map[string]string{"manifest.json": "{}\n", "sources/templates/a.tmpl": "x = 1\n", "trials.parquet": "PAR1....PAR1"}
	dir := writeBundle(t, files)
	if n, err := Verify(dir); err != nil || n != 3 {
		t.Fatalf("intact bundle: %d files, %v", n, err)
	}
	// One byte changed.
	p := filepath.Join(dir, "sources", "templates", "a.tmpl")
	if err := os.WriteFile(p, []byte("x = 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Verify(dir)
	var ve *VerifyError
	if !errors.As(err, &ve) || !errors.Is(err, ErrChecksum) || len(ve.Problems) != 1 || ve.Problems[0] != (Problem{"sources/templates/a.tmpl", "changed"}) {
		t.Fatalf("one byte changed: %v", err)
	}
	if !strings.Contains(err.Error(), "sources/templates/a.tmpl changed") {
		t.Errorf("error does not name the file: %v", err)
	}
	// Missing and unlisted files.
	dir = writeBundle(t, files)
	os.Remove(filepath.Join(dir, "trials.parquet"))
	os.WriteFile(filepath.Join(dir, "extra.txt"), []byte("hi"), 0o644)
	_, err = Verify(dir)
	if !errors.As(err, &ve) || len(ve.Problems) != 2 {
		t.Fatalf("missing + unlisted: %v", err)
	}
	if ve.Problems[0] != (Problem{"trials.parquet", "missing"}) || ve.Problems[1] != (Problem{"extra.txt", "not listed"}) {
		t.Errorf("problems = %+v", ve.Problems)
	}
	// Not a bundle; a bad line.
	if _, err := Verify(t.TempDir()); !errors.Is(err, ErrNotBundle) {
		t.Errorf("no SHA256SUMS: %v", err)
	}
	dir = writeBundle(t, files)
	os.WriteFile(filepath.Join(dir, SumsFile), []byte("abc  manifest.json\n"), 0o644)
	if _, err := Verify(dir); err == nil || !strings.Contains(err.Error(), "SHA256SUMS:1") {
		t.Errorf("malformed line: %v", err)
	}
}

// TestVarsAndQuote: variables become --var strings HCL reads back
// (strings as they are, numbers and lists as JSON); sensitive ones are
// set apart; shell quoting only where needed.
func TestVarsAndQuote(t *testing.T) {
	m := manifestWith(map[string]any{"duration": "3s", "connections": float64(16), "sizes": []any{"6", "4KiB"}, "token": SensitiveValue})
	vars, sensitive := Vars(m)
	want := map[string]string{"duration": "3s", "connections": "16", "sizes": `["6","4KiB"]`}
	for k, v := range want {
		if vars[k] != v {
			t.Errorf("vars[%s] = %q, want %q", k, vars[k], v)
		}
	}
	if len(vars) != 3 || len(sensitive) != 1 || sensitive[0] != "token" {
		t.Errorf("vars %v, sensitive %v", vars, sensitive)
	}
	for in, want := range map[string]string{"a=3s": "a=3s", `s=["6"]`: `'s=["6"]'`, "it's": `'it'\''s'`, "": "''"} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}

func manifestWith(vars map[string]any) *results.Manifest {
	m := &results.Manifest{}
	m.Pipeline.Variables = vars
	return m
}
