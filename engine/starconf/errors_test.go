package starconf_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"

	"github.com/benchflow/benchflow/engine/plan"
	"github.com/benchflow/benchflow/engine/starconf"
)

// located is one expected or reported error: "file:line: Summary".
func located(file string, line int, summary string) string {
	return fmt.Sprintf("%s:%d: %s", file, line, summary)
}

// expectedErrors reads `# ERROR: <summary>` comments.
func expectedErrors(t *testing.T, file string, src []byte) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(src))
	sc.Buffer(nil, 1<<20) // some files test very long lines
	for line := 1; sc.Scan(); line++ {
		if _, after, ok := strings.Cut(sc.Text(), "# ERROR: "); ok {
			out = append(out, located(file, line, strings.TrimSpace(after)))
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s has no # ERROR: comment", file)
	}
	return out
}

func reported(diags hcl.Diagnostics) []string {
	var out []string
	for _, d := range diags {
		if d.Severity != hcl.DiagError {
			continue
		}
		if d.Subject == nil {
			out = append(out, located("?", 0, d.Summary))
			continue
		}
		out = append(out, located(d.Subject.Filename, d.Subject.Start.Line, d.Summary))
	}
	sort.Strings(out)
	return out
}

// TestErrorFiles runs every testdata/error-files/*.star (then plans it when
// it parses) and compares the located errors with its # ERROR: comments.
func TestErrorFiles(t *testing.T) {
	dir := "testdata/error-files"
	files, err := filepath.Glob(filepath.Join(dir, "*.star"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no error files: %v", err)
	}
	fsys := os.DirFS(dir)
	for _, f := range files {
		name := filepath.Base(f)
		t.Run(name, func(t *testing.T) {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			want := expectedErrors(t, name, src)
			sort.Strings(want)
			var printed bytes.Buffer
			p, diags := starconf.ParseContext(context.Background(), fsys, name, name, starconf.Options{MaxSteps: 100_000, MaxAlloc: 32 << 20, Print: &printed})
			if !diags.HasErrors() {
				if p == nil {
					t.Fatal("no pipeline and no errors")
				}
				_, d := plan.Build(p, plan.Inputs{})
				diags = append(diags, d...)
			}
			if diff := cmp.Diff(want, reported(diags)); diff != "" {
				t.Errorf("errors differ (-want +got):\n%s\nall diagnostics:\n%s", diff, diags.Error())
			}
			for _, d := range diags {
				if d.Summary == "Starlark runtime error" || d.Summary == "Execution step limit exceeded" {
					if !strings.Contains(d.Detail, "Traceback (most recent call last)") {
						t.Errorf("%s: detail has no backtrace: %q", d.Summary, d.Detail)
					}
				}
			}
		})
	}
}

func TestRuntimeErrorBacktraceNamesEveryFrame(t *testing.T) {
	fsys := fstest.MapFS{
		"main.star":      {Data: []byte("load(\"lib/rates.star\", \"rate\")\npipeline(\"p\")\nstep.load(\"main\", target = \"http://127.0.0.1:1/\", rate = rate(0))\n")},
		"lib/rates.star": {Data: []byte("def rate(n):\n    return 1000 / n\n")},
	}
	_, diags := starconf.Parse(fsys, "study/main.star", "main.star")
	if len(diags) != 1 {
		t.Fatalf("want one diagnostic, got %v", diags)
	}
	d := diags[0]
	if d.Subject == nil || d.Subject.Filename != "study/lib/rates.star" || d.Subject.Start.Line != 2 {
		t.Errorf("subject = %v, want study/lib/rates.star line 2", d.Subject)
	}
	for _, want := range []string{"study/main.star:3:", "study/lib/rates.star:2:", "in rate", "floating-point division by zero"} {
		if !strings.Contains(d.Detail, want) {
			t.Errorf("detail lacks %q:\n%s", want, d.Detail)
		}
	}
}

func TestLoadSharesHelpers(t *testing.T) {
	fsys := fstest.MapFS{
		"main.star":       {Data: []byte("load(\"lib/common.star\", \"sizes\", \"web\")\npipeline(\"p\")\nmatrix(size = sizes)\nweb(\"a\")\nload(\"lib/common.star\", again = \"sizes\")\n")},
		"lib/common.star": {Data: []byte("sizes = [str(1 << i) + \"KiB\" for i in range(4)]\ndef web(name):\n    return service(name, command = [\"serve\", \"--size\", matrix.size])\n")},
	}
	p, diags := starconf.Parse(fsys, "main.star", "main.star")
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	if len(p.Matrix.Axes) != 1 || len(p.Services) != 1 || p.Services[0].Name != "a" {
		t.Fatalf("axes %d, services %v", len(p.Matrix.Axes), p.Services)
	}
	if got := p.Services[0].DeclRange; got.Filename != "lib/common.star" || got.Start.Line != 3 {
		t.Errorf("service declared at %q %d, want lib/common.star line 3", got.Filename, got.Start.Line)
	}
	pl, diags := plan.Build(p, plan.Inputs{})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	if len(pl.Trials) != 4 {
		t.Errorf("trials = %d, want 4", len(pl.Trials))
	}
}

func TestLoadRefusesEscapes(t *testing.T) {
	for _, tc := range []struct{ name, module string }{
		{"parent", "../x.star"},
		{"inner parent", "lib/../../x.star"},
		{"absolute", "/tmp/x.star"},
		{"symlink", "link.star"},
		{"symlinked folder", "linkdir/x.star"},
		{"not star", "x.py"},
		{"empty", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fsys := fstest.MapFS{
				"main.star":   {Data: []byte(fmt.Sprintf("load(%q, \"x\")\npipeline(\"p\")\n", tc.module))},
				"link.star":   {Data: []byte("../../etc/x.star"), Mode: os.ModeSymlink},
				"linkdir":     {Data: []byte("/etc"), Mode: os.ModeSymlink},
				"real/x.star": {Data: []byte("x = 1\n")},
			}
			_, diags := starconf.Parse(fsys, "main.star", "main.star")
			if len(diags) != 1 || diags[0].Summary != "Forbidden load() path" {
				t.Fatalf("want one Forbidden load() path error, got %v", diags)
			}
			if diags[0].Subject.Start.Line != 1 {
				t.Errorf("error at line %d, want 1", diags[0].Subject.Start.Line)
			}
		})
	}
}

func TestLoadCycle(t *testing.T) {
	fsys := fstest.MapFS{
		"main.star": {Data: []byte("load(\"a.star\", \"x\")\npipeline(\"p\")\n")},
		"a.star":    {Data: []byte("load(\"b.star\", \"y\")\nx = y\n")},
		"b.star":    {Data: []byte("load(\"a.star\", \"x\")\ny = x\n")},
	}
	_, diags := starconf.Parse(fsys, "main.star", "main.star")
	if !diags.HasErrors() || !strings.Contains(diags[0].Detail, "cycle") {
		t.Fatalf("want a load cycle error, got %v", diags)
	}
}

func TestCancelledContextStopsExecution(t *testing.T) {
	fsys := fstest.MapFS{"main.star": {Data: []byte("pipeline(\"p\")\nn = 0\nwhile True:\n    n += 1\n")}}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		time.Sleep(20 * time.Millisecond)
		cancel()
	}()
	// No step limit would stop this loop soon: only the cancellation does.
	_, diags := starconf.ParseContext(ctx, fsys, "main.star", "main.star", starconf.Options{MaxSteps: 1 << 62})
	if len(diags) != 1 || diags[0].Summary != "Pipeline evaluation cancelled" {
		t.Fatalf("want a cancellation error, got %v", diags)
	}
	// The interpreter checks for cancellation at loop jumps; the line it
	// reports for them varies, the file does not.
	if diags[0].Subject == nil || diags[0].Subject.Filename != "main.star" {
		t.Errorf("cancellation located at %v, want main.star", diags[0].Subject)
	}
}

func TestPrintGoesToOptionsPrint(t *testing.T) {
	var out bytes.Buffer
	fsys := fstest.MapFS{"main.star": {Data: []byte("pipeline(\"p\")\nprint(\"sizes\", [1, 2])\n")}}
	_, diags := starconf.ParseContext(context.Background(), fsys, "main.star", "main.star", starconf.Options{Print: &out})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	if got, want := out.String(), "main.star:2,6: sizes [1, 2]\n"; got != want {
		t.Errorf("printed %q, want %q", got, want)
	}
}

func TestReadErrorIsLocated(t *testing.T) {
	_, diags := starconf.Parse(fstest.MapFS{}, "nope.star", "nope.star")
	if len(diags) != 1 || diags[0].Summary != "Cannot read pipeline file" || diags[0].Subject.Filename != "nope.star" {
		t.Fatalf("got %v", diags)
	}
}

// TestNoGoroutineLeft checks that the goroutine watching the context ends
// with every parse, successful or not.
func TestNoGoroutineLeft(t *testing.T) {
	fsys := fstest.MapFS{
		"ok.star":  {Data: []byte("pipeline(\"p\")\nstep.load(\"main\", target = \"http://127.0.0.1:1/\")\n")},
		"bad.star": {Data: []byte("pipeline(\"p\")\n1 // 0\n")},
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	before := runtime.NumGoroutine()
	for i := 0; i < 50; i++ {
		for _, name := range []string{"ok.star", "bad.star"} {
			starconf.ParseContext(ctx, fsys, name, name, starconf.Options{})
		}
	}
	// Goroutines end asynchronously after their channel closes.
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Errorf("%d goroutines before, %d after 100 parses", before, n)
	}
}

// A symbolic link inside the pipeline's folder loads (the same rule as
// file() and templatefile()); a loop of links is refused, not followed
// forever.
func TestLoadFollowsLinksInside(t *testing.T) {
	fsys := fstest.MapFS{
		"main.star":   {Data: []byte("load(\"lib/x.star\", \"x\")\npipeline(\"p\")\n")},
		"lib":         {Data: []byte("real"), Mode: os.ModeSymlink},
		"real/x.star": {Data: []byte("x = 1\n")},
	}
	if _, diags := starconf.Parse(fsys, "main.star", "main.star"); diags.HasErrors() {
		t.Fatalf("load() through a link inside the folder: %v", diags)
	}
	loop := fstest.MapFS{
		"main.star": {Data: []byte("load(\"a.star\", \"x\")\npipeline(\"p\")\n")},
		"a.star":    {Data: []byte("b.star"), Mode: os.ModeSymlink},
		"b.star":    {Data: []byte("a.star"), Mode: os.ModeSymlink},
	}
	_, diags := starconf.Parse(loop, "main.star", "main.star")
	if len(diags) != 1 || diags[0].Summary != "Forbidden load() path" {
		t.Fatalf("a loop of links: %v", diags)
	}
}

// With the default budget, one operation asking for gigabytes fails at
// once, located, before anything is allocated; ordinary uses of * and +
// are untouched.
func TestDefaultAllocationBudget(t *testing.T) {
	fsys := fstest.MapFS{"main.star": {Data: []byte("pipeline(\"p\")\nok = [1, 2] * 3 + [4]\ns = \"ab\" * 2 + \"c\"\nx = [0] * 1000000000\n")}}
	_, diags := starconf.Parse(fsys, "main.star", "main.star")
	if len(diags) != 1 || diags[0].Summary != "Memory budget exceeded" || diags[0].Subject.Start.Line != 4 {
		t.Fatalf("want one Memory budget exceeded at line 4, got %v", diags)
	}
	if !strings.Contains(diags[0].Detail, "512 MiB") {
		t.Errorf("detail does not name the budget: %s", diags[0].Detail)
	}
}
