package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestStarlarkLoadedFilesKept: the files a Starlark pipeline load()s are
// copied into the run directory and listed in manifest.json with their
// sha256, and --resume refuses once one of them changed.
func TestStarlarkLoadedFilesKept(t *testing.T) {
	dir := t.TempDir()
	lib := `def web(size):
    return service(
        "web",
        command = [benchflow.bin, "serve", "--addr", "127.0.0.1:" + self.port.http, "--size", size],
        ports = {"http": {}},
        health = {"http": "/"},
    )
`
	main := `load("lib/web.star", "web")
pipeline("sources")
w = web("6")
step.load("main", target = w.url + "/", connections = 2, threads = 1, duration = "300ms")
`
	if err := os.MkdirAll(filepath.Join(dir, "lib"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, src := range map[string]string{"p.star": main, "lib/web.star": lib} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(bin, "apply", "p.star", "--out", "results", "-q")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("apply: %v\n%s", err, out)
	}
	runs, _ := filepath.Glob(filepath.Join(dir, "results", "2*"))
	if len(runs) != 1 {
		t.Fatalf("want one run directory, got %v", runs)
	}
	run := runs[0]
	kept, err := os.ReadFile(filepath.Join(run, "sources", "lib", "web.star"))
	if err != nil || string(kept) != lib {
		t.Fatalf("sources/lib/web.star = %q, %v; want the loaded file", kept, err)
	}
	if b, err := os.ReadFile(filepath.Join(run, "pipeline.star")); err != nil || string(b) != main {
		t.Errorf("pipeline.star = %q, %v", b, err)
	}
	var m struct {
		Pipeline struct {
			SHA256 string `json:"sha256"`
			Files  []struct {
				Path   string `json:"path"`
				SHA256 string `json:"sha256"`
			} `json:"files"`
		} `json:"pipeline"`
	}
	b, err := os.ReadFile(filepath.Join(run, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if len(m.Pipeline.Files) != 1 || m.Pipeline.Files[0].Path != "lib/web.star" || len(m.Pipeline.Files[0].SHA256) != 64 {
		t.Errorf("manifest pipeline.files = %+v, want lib/web.star with its sha256", m.Pipeline.Files)
	}

	// A changed loaded file is a changed pipeline.
	if err := os.WriteFile(filepath.Join(dir, "lib", "web.star"), []byte(strings.Replace(lib, `"web"`, `"web2"`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd = exec.Command(bin, "apply", "p.star", "--resume", run, "-q")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "changed") {
		t.Errorf("--resume after editing a loaded file: err %v, output:\n%s\nwant a refusal naming the change", err, out)
	}
}
