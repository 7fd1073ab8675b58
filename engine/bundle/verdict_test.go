package bundle

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/benchflow/benchflow/engine/claims"
	"github.com/benchflow/benchflow/engine/report"
	"github.com/benchflow/benchflow/engine/results"
)

// otherMachine is a "here" unlike the machine the examples ran on, in
// every way a verdict ranks: another CPU, kernel and virtualization,
// other tool versions, 8 mitigations that differ, one sysctl set
// otherwise and three that differ by a rounding (fs.file-max is sized
// from the memory).
func otherMachine(env map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range env {
		out[k] = v
	}
	out["cpu_model"] = "AMD EPYC 7B13 64-Core Processor"
	out["cpu_cores"], out["cpu_threads"], out["allowed_cpus"] = 8.0, 16.0, 16.0
	out["kernel_release"] = "6.1.0-27-amd64"
	out["virtualization"] = "none"
	out["benchflow_version"] = "0123abc"
	tools := map[string]any{}
	if t, ok := env["tools"].(map[string]any); ok {
		for k, v := range t {
			tools[k] = v
		}
	}
	tools["nginx"] = "nginx version: nginx/1.26.3"
	out["tools"] = tools
	vul := map[string]any{}
	for i := 0; i < 8; i++ {
		vul[fmt.Sprintf("vuln_%d", i)] = "Mitigation: something long enough to fill a line by itself; SMT vulnerable"
	}
	out["cpu_vulnerabilities"] = vul
	sys := map[string]any{}
	if s, ok := env["sysctls"].(map[string]any); ok {
		for k, v := range s {
			sys[k] = v
		}
	}
	sys["net.core.somaxconn"] = "128"
	sys["fs.file-max"] = "2466089"
	sys["fs.inode-max"], sys["vm.max_map_count"] = "1000000", "65530"
	out["sysctls"] = sys
	return out
}

// bundleEnv sets the recorded values otherMachine's fields are compared
// with (the examples recorded no fs.inode-max, for one).
func bundleEnv(env map[string]any) {
	sys, _ := env["sysctls"].(map[string]any)
	if sys == nil {
		sys = map[string]any{}
		env["sysctls"] = sys
	}
	sys["fs.file-max"], sys["fs.inode-max"], sys["vm.max_map_count"] = "2466116", "1000400", "65531"
	if sys["net.core.somaxconn"] == "128" {
		sys["net.core.somaxconn"] = "4096"
	}
	vul := map[string]any{}
	for i := 0; i < 8; i++ {
		vul[fmt.Sprintf("vuln_%d", i)] = "Not affected"
	}
	env["cpu_vulnerabilities"] = vul
}

// TestExampleVerdictsFitAScreen: the verdict of every example bundle,
// reproduced (its committed reproduced/ run) on a machine unlike it in
// everything the verdict ranks, with a variable set otherwise, every
// trial here started busy and every claim moved, is one screen (at most
// 40 lines): each difference once, ranked — the variable, the machine's
// load, the CPU, the kernel, the virtualization, the versions, the rest —,
// the mitigations in one line, the sysctls that differ by a rounding
// counted and not listed, and each moved claim and cell naming at most
// three of them.
func TestExampleVerdictsFitAScreen(t *testing.T) {
	dirs, _ := filepath.Glob("../../examples/*/bundle")
	if len(dirs) == 0 {
		t.Fatal("no example bundle")
	}
	for _, dir := range dirs {
		again := filepath.Join(filepath.Dir(dir), "reproduced")
		if _, err := os.Stat(again); err != nil {
			continue
		}
		name := filepath.Base(filepath.Dir(dir))
		t.Run(name, func(t *testing.T) {
			a, err := results.ReadRun(dir)
			if err != nil {
				t.Fatal(err)
			}
			b, err := results.ReadRun(again)
			if err != nil {
				t.Fatal(err)
			}
			bundleEnv(a.Manifest.Environment)
			b.Manifest.Environment = otherMachine(a.Manifest.Environment)
			vars := map[string]any{}
			for k, v := range a.Manifest.Pipeline.Variables {
				vars[k] = v
			}
			keys := make([]string, 0, len(vars))
			for k := range vars {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			if len(keys) == 0 {
				t.Fatalf("%s has no variable", dir)
			}
			vars[keys[0]] = "1"
			b.Manifest.Pipeline.Variables = vars
			for i := range b.Trials {
				if b.Trials[i].StepKind != "warm" {
					b.Trials[i].QuietWindowS, b.Trials[i].BusyStart = 1, true
				}
			}
			claimsA, _, err := report.RecordedClaims(a)
			if err != nil {
				t.Fatal(err)
			}
			claimsB := append([]report.ClaimOutcome(nil), claimsA...)
			for i := range claimsB {
				if claimsB[i].Outcome == claims.Holds {
					claimsB[i].Outcome = claims.Fails
				} else {
					claimsB[i].Outcome = claims.Holds
				}
			}
			v, err := Judge(dir, a, b, claimsA, claimsB)
			if err != nil {
				t.Fatal(err)
			}
			var w bytes.Buffer
			if err := v.Write(&w, "text"); err != nil {
				t.Fatal(err)
			}
			text := w.String()
			lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
			if len(lines) > 40 {
				t.Errorf("the verdict is %d lines, more than a screen of 40:\n%s", len(lines), text)
			}
			for _, s := range []string{"cpu_vulnerabilities.", "fs.file-max", "fs.inode-max", "vm.max_map_count"} {
				if strings.Contains(text, s) {
					t.Errorf("the verdict lists %q:\n%s", s, text)
				}
			}
			for _, s := range []string{"mitigations (8 differ)", "and 3 sysctls within 1% (not listed)", "3 sysctls within 1%)"} {
				if !strings.Contains(text, s) {
					t.Errorf("the verdict lacks %q:\n%s", s, text)
				}
			}
			// Each difference once, in the ranked order.
			order := []string{"variable " + keys[0], "machine load  ", "cpu_model", "kernel_release", "virtualization", "tools.nginx", "benchflow_version", "mitigations (8 differ)", "sysctls.net.core.somaxconn"}
			last := -1
			for _, s := range order {
				i := strings.Index(text, "\n  "+s)
				if i < 0 {
					t.Errorf("no line for %q:\n%s", s, text)
					continue
				}
				if n := strings.Count(text, "\n  "+s); n != 1 {
					t.Errorf("%q starts %d lines (want one):\n%s", s, n, text)
				}
				if i < last {
					t.Errorf("%q is out of the ranked order:\n%s", s, text)
				}
				last = i
			}
			// A moved row names at most three causes, likeliest first.
			moved := regexp.MustCompile(`differs here: ([^\n]*?)(?: \(\+(\d+) more\))?\s*$`)
			nmoved := 0
			for _, l := range lines {
				m := moved.FindStringSubmatch(l)
				if m == nil {
					continue
				}
				nmoved++
				causes := strings.Split(m[1], ", ")
				if len(causes) > 3 || causes[0] != keys[0] || causes[1] != "machine load" {
					t.Errorf("a moved row names %q", m[1])
				}
			}
			if nmoved < len(claimsA) {
				t.Errorf("%d moved rows name their causes, want at least the %d claims:\n%s", nmoved, len(claimsA), text)
			}
		})
	}
}

// TestChanges: mitigations fold into one line counted, sysctls within
// 1% are counted and left out, a sysctl that is not a number or differs
// by more is listed, and the ranks order the rest.
func TestChanges(t *testing.T) {
	diffs := []results.Difference{
		{Field: "sysctls.fs.file-max", A: "2466116", B: "2466089"},
		{Field: "sysctls.net.ipv4.tcp_rmem", A: "4096 131072 6291456", B: "4096 131072 6291400"},
		{Field: "sysctls.net.core.somaxconn", A: "4096", B: "4000"},
		{Field: "cpu_vulnerabilities.meltdown", A: "Not affected", B: "Mitigation: PTI"},
		{Field: "cpu_vulnerabilities.mds", A: "Not affected", B: "Vulnerable"},
		{Field: "tools.nginx", A: "1.22", B: "1.26"},
		{Field: "memory_bytes", A: "1", B: "2"},
		{Field: "kernel_release", A: "6.1", B: "6.18"},
		{Field: "cpu_threads", A: "2", B: "4"},
		{Field: "cpu_model", A: "x", B: "y"},
		{Field: "docker_storage_driver", A: "overlay2", B: "", Docker: true},
	}
	got, rounded := results.Changes(diffs)
	var names []string
	for _, c := range got {
		names = append(names, c.Name)
	}
	want := "cpu_model|cpu_threads|kernel_release|tools.nginx|docker_storage_driver|memory_bytes|mitigations (2 differ)|sysctls.net.core.somaxconn|sysctls.net.ipv4.tcp_rmem"
	if strings.Join(names, "|") != want || rounded != 1 {
		t.Errorf("changes %s (rounded %d), want %s (rounded 1)", strings.Join(names, "|"), rounded, want)
	}
	for _, c := range got {
		if c.Name == "mitigations (2 differ)" && (c.Bundle != "2 not affected" || c.Here != "1 mitigated, 1 vulnerable") {
			t.Errorf("mitigations line %+v", c)
		}
		if c.Name == "docker_storage_driver" && (!c.Docker || c.Here != "(absent)") {
			t.Errorf("docker line %+v", c)
		}
	}
}

// TestCommandsSuggestAShorterLoad: the page's "Reproduce it" suggests a
// --var that changes something (a shorter duration, fewer requests), never
// the bundle's own value, which reproduce uses anyway; with no such
// variable it suggests none.
func TestCommandsSuggestAShorterLoad(t *testing.T) {
	for _, c := range []struct {
		vars map[string]any
		want string // the --var suggested, "" for none
	}{
		{map[string]any{"duration": "3s", "connections": 16.0}, "--var duration=1s"},
		{map[string]any{"duration": "30s"}, "--var duration=15s"},
		{map[string]any{"duration": "1s", "warm": "4s"}, "--var warm=2s"},
		{map[string]any{"requests": 2000.0}, "--var requests=1000"},
		{map[string]any{"duration": "1s", "connections": 16.0}, ""},
		{nil, ""},
	} {
		m := &results.Manifest{Pipeline: results.PipelineInfo{Variables: c.vars}}
		all := strings.Join(Commands("study", m), "\n")
		if !strings.Contains(all, "benchflow reproduce study --yes") {
			t.Errorf("%v: no reproduce --yes line:\n%s", c.vars, all)
		}
		for k, v := range c.vars {
			if s, ok := v.(string); ok && strings.Contains(all, "--var "+k+"="+s+" ") {
				t.Errorf("%v: suggests the bundle's own %s=%s:\n%s", c.vars, k, s, all)
			}
		}
		switch {
		case c.want == "" && strings.Contains(all, "--var"):
			t.Errorf("%v: suggests a --var:\n%s", c.vars, all)
		case c.want != "" && !strings.Contains(all, c.want+" "):
			t.Errorf("%v: want %q in:\n%s", c.vars, c.want, all)
		}
	}
}

// TestVerdictNamesStackVersions: a cell that did not reproduce on a
// stack with another Nomad client is explained by that version, and the
// verdict's environment table shows both values.
func TestVerdictNamesStackVersions(t *testing.T) {
	withStack := func(r *results.Run, client string) *results.Run {
		for i := range r.Manifest.Trials {
			r.Manifest.Trials[i].Services = []results.ServiceEntry{{Name: "web", Type: "nomad",
				Versions: map[string]string{"nomad_server": "1.6.5", "nomad_client": client, "apisix": "3.9.1"}}}
		}
		return r
	}
	a := withStack(loadRun("20261201T000000Z-aaaa", 1000, []any{0.5, 0.5, 0.5}, 1, "v1"), "1.6.5")
	b := withStack(loadRun("20261202T000000Z-bbbb", 2000, []any{0.5, 0.5, 0.5}, 1, "v1"), "1.7.0")
	v, err := Judge("bundle", a, b, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Environment) != 1 || v.Environment[0].String() != "services.nomad.nomad_client: 1.6.5 → 1.7.0" {
		t.Errorf("environment differences: %v", v.Environment)
	}
	if len(v.Cells) != 1 || v.Cells[0].Reproduced != "no" || strings.Join(v.Cells[0].Explain, "|") != "services.nomad.nomad_client" {
		t.Fatalf("cells: %+v", v.Cells)
	}
	var text strings.Builder
	if err := v.Write(&text, "text"); err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`services\.nomad\.nomad_client\s+1\.6\.5\s+1\.7\.0`).MatchString(text.String()) {
		t.Errorf("text verdict lacks the nomad_client row:\n%s", text.String())
	}
}

// TestVerdictTooNoisy: examples/nginx-long-short was reproduced on a busy
// machine with req/s ratio intervals of ×/÷1.7 to ×/÷2.7; the verdict
// calls none of its cells reproduced: each is "not judged: too noisy"
// with its width, the summary counts them among the cells not judged and
// says what would help, and --exit-on cells does not count them.
func TestVerdictTooNoisy(t *testing.T) {
	a, err := results.ReadRun("../../examples/nginx-long-short/bundle")
	if err != nil {
		t.Fatal(err)
	}
	b, err := results.ReadRun("../../examples/nginx-long-short/reproduced")
	if err != nil {
		t.Fatal(err)
	}
	v, err := Judge("bundle", a, b, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Cells) == 0 {
		t.Fatal("no cell")
	}
	for _, c := range v.Cells {
		if c.Reproduced != report.ReproducedTooNoisy {
			t.Errorf("%s: reproduced %q with ratio %+v, want %q", c.Cell, c.Reproduced, c.Ratio, report.ReproducedTooNoisy)
		}
	}
	if n := v.CellsNotReproduced(); n != 0 {
		t.Errorf("%d cells count as not reproduced", n)
	}
	var w bytes.Buffer
	if err := v.Write(&w, "text"); err != nil {
		t.Fatal(err)
	}
	want := []string{"not judged: too noisy (×/÷2.", fmt.Sprintf("0 of %d cells reproduced (%d could not be judged; %d too noisy: req/s ratio interval wider than ×/÷1.5, more repetitions or a quieter machine would narrow it)", len(v.Cells), len(v.Cells), len(v.Cells))}
	for _, s := range want {
		if !strings.Contains(w.String(), s) {
			t.Errorf("the verdict lacks %q:\n%s", s, w.String())
		}
	}
}
