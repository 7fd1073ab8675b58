package bundle

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/benchflow/benchflow/engine/escape"
	"github.com/benchflow/benchflow/engine/results"
)

// SensitiveValue is what manifest.json records for a sensitive variable.
const SensitiveValue = "(sensitive)"

// PipelineFile returns the name of the bundle's pipeline source
// ("pipeline.hcl" or "pipeline.star").
func PipelineFile(m *results.Manifest) string {
	if m.Pipeline.Format == "star" {
		return "pipeline.star"
	}
	return "pipeline.hcl"
}

// Stage copies the bundle's pipeline and every file it read (sources/)
// into the folder into, which then is the pipeline's folder as it was
// when it ran; it returns the path of the pipeline file there.
func Stage(bundleDir string, m *results.Manifest, into string) (string, error) {
	name := PipelineFile(m)
	if err := os.MkdirAll(into, 0o755); err != nil {
		return "", fmt.Errorf("staging the pipeline: %w", err)
	}
	if err := copyFile(filepath.Join(bundleDir, name), filepath.Join(into, name)); err != nil {
		return "", fmt.Errorf("staging the pipeline: %w", err)
	}
	src := filepath.Join(bundleDir, results.SourcesDir)
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == src && os.IsNotExist(err) {
				return filepath.SkipDir // the pipeline read no other file
			}
			return err
		}
		rel, _ := filepath.Rel(src, p)
		dst := filepath.Join(into, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(dst, 0o755)
		case d.Type().IsRegular():
			return copyFile(p, dst)
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("staging the pipeline's files: %w", err)
	}
	return filepath.Join(into, name), nil
}

// Vars returns the bundle's variables as --var name=value strings
// (strings as they are, other values as JSON, which HCL reads), sorted by
// name; sensitive ones, recorded redacted, are returned in sensitive.
func Vars(m *results.Manifest) (vars map[string]string, sensitive []string) {
	vars = map[string]string{}
	for k, v := range m.Pipeline.Variables {
		switch x := v.(type) {
		case string:
			if x == SensitiveValue {
				sensitive = append(sensitive, k)
				continue
			}
			vars[k] = x
		default:
			b, _ := json.Marshal(x)
			vars[k] = string(b)
		}
	}
	sort.Strings(sensitive)
	return vars, sensitive
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=,+@%") == "" {
		return s
	}
	// A line break is written $'\n' outside the quotes, so that the
	// command stays on one line (of a Markdown code block too).
	return "'" + strings.NewReplacer("'", `'\''`, "\n", `'$'\n''`, "\r", `'$'\r''`).Replace(s) + "'"
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// ReproduceDir is where `benchflow reproduce` puts its run by default, in
// the current folder: reproduce-<pipeline name>, the name kept to
// letters, digits, '-', '_' and '.'.
func ReproduceDir(pipelineName string) string {
	b := []byte(pipelineName)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			b[i] = '-'
		}
	}
	return "reproduce-" + string(b)
}

// Commands are the shell commands that check and rerun the bundle named
// name (its folder, relative to where they run).
func Commands(name string, m *results.Manifest) []string {
	q := shellQuote(name)
	cmds := []string{
		"cd " + q + " && sha256sum -c --quiet SHA256SUMS && cd ..",
		"benchflow reproduce " + q + " --plan   # what it will run here; runs nothing",
		"benchflow reproduce " + q + "   # the plan, then asks; runs it in a sandbox",
	}
	vars, _ := Vars(m)
	if k, v := shorterLoad(vars); k != "" {
		cmds = append(cmds, fmt.Sprintf("benchflow reproduce %s --yes --var %s   # without asking, a shorter load than the bundle's %s; any variable can be changed", q, shellQuote(k+"="+v), shellQuote(k+"="+vars[k])))
	} else {
		cmds = append(cmds, fmt.Sprintf("benchflow reproduce %s --yes   # without asking", q))
	}
	cmds = append(cmds, "benchflow report "+q)
	return cmds
}

// shorterLoad suggests a variable that shortens the load, and its value:
// half a duration the bundle ran with (whole seconds, at least 1s: 3s →
// 1s, 30s → 15s), else half a count of requests; "" when no variable
// would be shorter (a --var of the bundle's own value changes nothing).
func shorterLoad(vars map[string]string) (string, string) {
	keys := sortedKeys(vars)
	for i, k := range keys {
		if k == "duration" { // the one usually shortened first
			keys = append([]string{k}, append(keys[:i:i], keys[i+1:]...)...)
			break
		}
	}
	for _, k := range keys {
		// Only a value with its unit is taken for a duration: variables
		// are untyped, and a bare number (connections = 16, requests =
		// 2000) is a count, not seconds.
		d, err := time.ParseDuration(vars[k])
		if err != nil || d <= time.Second {
			continue
		}
		return k, (max(d/2, time.Second) / time.Second * time.Second).String()
	}
	for _, k := range keys {
		if k != "requests" && !strings.HasSuffix(k, "_requests") {
			continue
		}
		if n, err := strconv.ParseInt(vars[k], 10, 64); err == nil && n > 1 {
			return k, strconv.FormatInt(n/2, 10)
		}
	}
	return "", ""
}

// reproduceMD is REPRODUCE.md: what the bundle is and the exact commands
// that check it, rerun it and read it.
func reproduceMD(name string, m *results.Manifest, load Load, files []File, key *SigningKey, dropped []string) string {
	var b strings.Builder
	p := m.Pipeline
	fmt.Fprintf(&b, "# Reproducing %s\n\n", escape.Markdown(strconv.Quote(p.Name)))
	fmt.Fprintf(&b, "This folder is run %s of the pipeline %s (%s, sha256 `%.12s…`), run with benchflow %s from %s to %s, status %s, published as a self-contained bundle: the pipeline and every file it read, the variables, the environment it ran on, the tables, the report and the checksums.\n\n",
		escape.MarkdownCode(m.RunID), escape.MarkdownCode(p.Name), escape.MarkdownCode(p.File), p.SHA256, escape.Markdown(cmp.Or(m.BenchflowVersion, "?")), m.StartedAt.Format("2006-01-02 15:04:05Z"), finished(m), escape.Markdown(m.Status))
	b.WriteString("## 1. Check it\n\n")
	if key != nil {
		fmt.Fprintf(&b, "Every file but `SHA256SUMS` and its signature `%s` is listed in it:\n\n", SigFile)
	} else {
		b.WriteString("Every file but `SHA256SUMS` is listed in it:\n\n")
	}
	fmt.Fprintf(&b, "    cd %s && sha256sum -c SHA256SUMS\n\n", shellQuote(name))
	b.WriteString("`benchflow reproduce` runs the same check first and refuses a bundle that differs, naming the file.\n\n")
	if key != nil {
		fmt.Fprintf(&b, "`SHA256SUMS` is signed by the SSH key `%s %s` (`%s`, OpenSSH's signature format, namespace `%s`). ", key.KeyType(), key.Fingerprint(), SigFile, SigNamespace)
		b.WriteString("The signature names its key, so it proves who published the bundle only to a reader who has that key from its owner (not from this folder): with it in an allowed-signers file (one line `PRINCIPAL KEYTYPE BASE64`, as `ssh-keygen -Y verify` reads it),\n\n")
		fmt.Fprintf(&b, "    cd %s && ssh-keygen -Y verify -f ALLOWED_SIGNERS -I PRINCIPAL -n %s -s %s < %s\n\n", shellQuote(name), SigNamespace, SigFile, SumsFile)
		fmt.Fprintf(&b, "checks it, and so does `benchflow reproduce %s --allowed-signers ALLOWED_SIGNERS`.\n\n", shellQuote(name))
	}
	b.WriteString("## 2. Rerun it here\n\n")
	b.WriteString("A bundle is code: its services and steps run commands on the machine that reproduces it. From the folder that holds this bundle,\n\n")
	fmt.Fprintf(&b, "    benchflow reproduce %s --plan\n\n", shellQuote(name))
	b.WriteString("prints what it will do there and runs nothing: every service's command or image, every `exec` and `tune` step, every network target, and what it needs beyond the sandbox (`--allow docker`, `--allow tune`, …). Then\n\n")
	fmt.Fprintf(&b, "    benchflow reproduce %s\n\n", shellQuote(name))
	b.WriteString("prints the same plan, asks (`yes` to go on; `--yes` without a terminal), runs the pipeline in a sandbox (the file system read-only but the results folder, home folders hidden, a network of its own; benchflow's docs/publishing.md, \"Trusting a bundle\") on this machine with the bundle's variables, and prints one verdict: per claim whether it holds here beside its outcome in the bundle, per matrix cell whether it reproduced (`compare`'s rule) with the ratio and its interval, and every recorded environment field that differs, next to the cells and claims that moved. ")
	fmt.Fprintf(&b, "`--var name=value` changes a variable (a shorter duration), `--out DIR` is where the new run goes (default `%s/`; the new run is itself a run folder that `benchflow publish` bundles), `--exit-on claims|cells|none` chooses what makes the exit status non-zero.\n\n", ReproduceDir(p.Name))
	vars, sensitive := Vars(m)
	b.WriteString("### The same by hand\n\n")
	b.WriteString("The pipeline's folder is `sources/` with the pipeline beside it; `apply` runs it unconfined, as you, so read it first:\n\n")
	fmt.Fprintf(&b, "    mkdir study && cp %s/%s study/ && { cp -R %s/sources/. study/ 2>/dev/null || true; }\n", shellQuote(name), PipelineFile(m), shellQuote(name))
	var flags []string
	for _, k := range sortedKeys(vars) {
		flags = append(flags, "--var "+shellQuote(k+"="+vars[k]))
	}
	for _, k := range sensitive {
		flags = append(flags, "--var "+shellQuote(k+"=…"))
	}
	fmt.Fprintf(&b, "    benchflow apply study/%s%s\n", PipelineFile(m), prefixed(" ", strings.Join(flags, " ")))
	fmt.Fprintf(&b, "    benchflow compare %s results/latest\n\n", shellQuote(name))
	if len(sensitive) > 0 {
		fmt.Fprintf(&b, "Sensitive variables are not recorded (%s): give them with `--var`.\n\n", escape.Markdown(strings.Join(sensitive, ", ")))
	}
	b.WriteString("## 3. Read it without benchflow\n\n")
	b.WriteString("`report.html` is the report with its charts (one self-contained page), `report.md` the same table in Markdown, `manifest.json` what ran where, `variables.json` the variables. The tables are Parquet (columns in benchflow's docs/results.md):\n\n")
	fmt.Fprintf(&b, "    duckdb -c \"SELECT param_*, rps, latency_p99_us FROM '%s/trials.parquet'\"\n", name)
	fmt.Fprintf(&b, "    python3 -c \"import pandas as pd; print(pd.read_parquet('%s/trials.parquet'))\"\n\n", name)
	if len(vars) > 0 || len(sensitive) > 0 {
		b.WriteString("## Variables\n\n| name | value |\n| --- | --- |\n")
		for _, k := range sortedKeys(vars) {
			fmt.Fprintf(&b, "| %s | %s |\n", escape.MarkdownCodeCell(k), escape.MarkdownCodeCell(vars[k]))
		}
		for _, k := range sensitive {
			fmt.Fprintf(&b, "| %s | (sensitive, not recorded) |\n", escape.MarkdownCodeCell(k))
		}
		b.WriteString("\n")
	}
	if rows := results.EnvironmentRows(m); len(rows) > 0 {
		b.WriteString("## The machine it ran on\n\n| | |\n| --- | --- |\n")
		for _, r := range rows {
			fmt.Fprintf(&b, "| %s | %s |\n", escape.Markdown(r[0]), escape.Markdown(r[1]))
		}
		b.WriteString("\nEvery recorded field is in `manifest.json` under `environment`.\n\n")
	}
	b.WriteString("## The load it was measured under\n\n")
	fmt.Fprintf(&b, "| | |\n| --- | --- |\n| load average before the first trial | %s |\n| load average at the trials' start | %s |\n| quiet checks before the loads | %s |\n| machine | %s |\n\n",
		escape.Markdown(load.AverageText()), escape.Markdown(load.TrialsText()), escape.Markdown(load.QuietText()), escape.Markdown(load.Verdict()))
	b.WriteString("A machine is busy when more than half of the trials started busy (a collect step's quiet check: processes outside the run using the CPU just before the load), or, without quiet checks, when its 1-minute load average before the first trial is at least its CPUs; a load average taken within a minute or two of a load counts that load too. ")
	if load.Busy {
		b.WriteString("**This bundle was measured on a busy machine**: its absolute figures (req/s, latency tails) are lower and noisier than a quiet machine gives; `benchflow reproduce` names the load first among what differs.\n\n")
	} else {
		b.WriteString("`benchflow reproduce` compares the load here with this one and names it first among what differs when either side was busy.\n\n")
	}
	b.WriteString("## Files\n\n| file | bytes |\n| --- | ---: |\n")
	for _, f := range files {
		fmt.Fprintf(&b, "| %s | %d |\n", escape.MarkdownCodeCell(f.Path), f.Bytes)
	}
	if key != nil {
		fmt.Fprintf(&b, "| `%s`, `%s`, `%s` | |\n", ReproduceFile, SumsFile, SigFile)
	} else {
		fmt.Fprintf(&b, "| `%s`, `%s` | |\n", ReproduceFile, SumsFile)
	}
	if len(dropped) > 0 {
		fmt.Fprintf(&b, "\nLeft out when publishing (`--drop`): %s.\n", strings.Join(dropped, ", "))
	}
	return b.String()
}

func prefixed(p, s string) string {
	if s == "" {
		return ""
	}
	return p + s
}

func finished(m *results.Manifest) string {
	if m.FinishedAt == nil {
		return "?"
	}
	return m.FinishedAt.Format("15:04:05Z")
}
