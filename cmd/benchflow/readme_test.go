package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestExampleReadmes: every README of examples/ (and the repository's)
// with benchflow sections shows exactly what `report` prints from the
// committed bundle (report --check --update exits 0), and at least the
// quickstart's has one.
func TestExampleReadmes(t *testing.T) {
	files, _ := filepath.Glob("../../examples/*/README.md")
	files = append(files, "../../README.md", "../../examples/README.md")
	checked := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), "<!-- benchflow:") {
			continue
		}
		checked++
		out, err := exec.Command(bin, "report", "--check", "--update", f).CombinedOutput()
		if err != nil {
			t.Errorf("%s differs from its bundles (regenerate: benchflow report --update %s): %v\n%s", f, f, err, out)
		}
	}
	if checked == 0 {
		t.Fatal("no README has a benchflow section; examples/quickstart/README.md should")
	}
}

// TestReadmeCheckCatchesAnEdit: a figure edited by hand in a generated
// section makes --check exit 1 naming the section; --update restores it;
// a section whose bundle changed is refused.
func TestReadmeCheckCatchesAnEdit(t *testing.T) {
	dir := t.TempDir()
	if out, err := exec.Command("cp", "-R", "../../examples/quickstart", dir).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v\n%s", err, out)
	}
	readme := filepath.Join(dir, "quickstart", "README.md")
	orig, _ := os.ReadFile(readme)
	start := strings.Index(string(orig), "<!-- benchflow:report bundle -->")
	if start < 0 {
		t.Fatal("examples/quickstart/README.md has no report section")
	}
	// Change the first digit of the section.
	b := []byte(string(orig))
	i := start + len("<!-- benchflow:report bundle -->")
	for i < len(b) && (b[i] < '0' || b[i] > '9') {
		i++
	}
	b[i] = '0' + (b[i]-'0'+1)%10
	os.WriteFile(readme, b, 0o644)
	out, err := exec.Command(bin, "report", "--check", "--update", readme).CombinedOutput()
	if exitCode(err) != 1 || !strings.Contains(string(out), "benchflow:report bundle differs from its bundle") {
		t.Errorf("--check after an edit: %v\n%s", err, out)
	}
	if out, err := exec.Command(bin, "report", "--update", readme).CombinedOutput(); err != nil {
		t.Fatalf("--update: %v\n%s", err, out)
	}
	if now, _ := os.ReadFile(readme); string(now) != string(orig) {
		t.Errorf("--update did not restore the section")
	}
	os.WriteFile(filepath.Join(dir, "quickstart", "bundle", "report.md"), []byte("edited\n"), 0o644)
	out, err = exec.Command(bin, "report", "--check", "--update", readme).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "report.md changed") {
		t.Errorf("--check with an edited bundle: %v\n%s", err, out)
	}
}
