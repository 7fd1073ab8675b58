package bundle

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/benchflow/benchflow/engine/claims"
	"github.com/benchflow/benchflow/engine/escape"
	"github.com/benchflow/benchflow/engine/report"
	"github.com/benchflow/benchflow/engine/results"
	"github.com/benchflow/benchflow/engine/stats"
)

// ClaimVerdict is a claim in the bundle beside the same claim here.
type ClaimVerdict struct {
	Name      string `json:"name"`
	Statement string `json:"statement,omitempty"`
	Bundle    string `json:"bundle"` // outcome in the bundle ("" when absent there)
	Here      string `json:"here"`   // outcome here ("" when absent here)
	Bound     string `json:"bound,omitempty"`
	// Estimate is the estimate here with its interval, as a label
	// ("0.353 [0.222, 0.562]"); Detail the report's sentence about it.
	Estimate string `json:"estimate,omitempty"`
	Detail   string `json:"detail,omitempty"`
	// Moved is true when the outcome here is not the bundle's.
	Moved bool `json:"moved"`
	// Explain names the changes that can explain a moved claim
	// (Verdict.Changes), likeliest first.
	Explain []string `json:"differs_here,omitempty"`
}

// CellVerdict is one matrix cell × load step, here against the bundle,
// by compare's rule (report.Compare).
type CellVerdict struct {
	Cell  string `json:"cell"`
	Step  string `json:"step"`
	Basis string `json:"basis"`
	// Reproduced is "yes", "no", "too noisy" (the ratio interval is wider
	// than ×/÷report.TooNoisyFactor: not judged) or "" (not enough
	// samples to judge).
	Reproduced string         `json:"reproduced"`
	Ratio      stats.Interval `json:"-"` // req/s here / bundle, 95% Welch interval on logs
	Verdict    string         `json:"verdict"`
	Explain    []string       `json:"differs_here,omitempty"`
	// Docker is true when a docker provider deployed the cell's service
	// (in the bundle or here): Docker's fields can explain it.
	Docker bool `json:"docker,omitempty"`
}

// Verdict is what `benchflow reproduce` prints: per claim, per cell, and
// the environment fields that differ.
type Verdict struct {
	Bundle      string               `json:"bundle"`
	BundleRun   string               `json:"bundle_run"`
	Run         string               `json:"run"`
	RunDir      string               `json:"run_dir"`
	Pipeline    string               `json:"pipeline"`
	Claims      []ClaimVerdict       `json:"claims"`
	Cells       []CellVerdict        `json:"cells"`
	Environment []results.Difference `json:"environment"`
	// Load is how busy the machine was in the bundle and here
	// (MachineLoad); when either was busy it is named first among what
	// differs next to every claim and cell that moved.
	Load LoadComparison `json:"load"`
	// Variables are the pipeline variables whose values differ (a --var of
	// reproduce): a shorter duration moves figures as surely as a slower
	// machine, so they are named next to every claim and cell that moved.
	Variables []VariableDifference `json:"variables,omitempty"`
	// Changes are the variables, the load and the environment fields that
	// differ, ranked as a reader looks for a cause (Rank*), the
	// mitigations in one line; Rounded counts the sysctls left out of them
	// because they differ by less than 1% (a rounding, as fs.file-max
	// sized from the memory).
	Changes  []results.Change `json:"changes"`
	Rounded  int              `json:"sysctls_within_rounding,omitempty"`
	Warnings []string         `json:"warnings,omitempty"`
}

// VariableDifference is a variable whose value here is not the bundle's
// (report.VariableDifference: compare names them the same way).
type VariableDifference = report.VariableDifference

func variableDifferences(a, b *results.Manifest) []VariableDifference {
	return report.VariableDifferences(a, b)
}

// Judge sets the run here beside the bundle's run: claims by name
// (claimsA from the bundle, as recorded there; claimsB from here), cells by compare's rule,
// and every recorded environment field that differs, named next to each
// claim and cell that moved (docker's fields only next to cells that a
// docker provider deployed).
func Judge(bundleDir string, a, b *results.Run, claimsA, claimsB []report.ClaimOutcome) (*Verdict, error) {
	c, err := report.Compare(a, b, report.CompareOptions{})
	if err != nil {
		return nil, err
	}
	v := &Verdict{Bundle: bundleDir, BundleRun: a.Manifest.RunID, Run: b.Manifest.RunID, RunDir: b.Dir,
		Pipeline: a.Manifest.Pipeline.Name, Environment: results.Differences(a.Manifest, b.Manifest)}
	for _, w := range c.Warnings {
		if !strings.Contains(w, "environments") && !strings.Contains(w, "fingerprint") {
			v.Warnings = append(v.Warnings, w)
		}
	}
	for _, l := range c.OnlyA {
		v.Warnings = append(v.Warnings, fmt.Sprintf("cell %s is in the bundle only (not run here)", l))
	}
	for _, l := range c.OnlyB {
		v.Warnings = append(v.Warnings, fmt.Sprintf("cell %s ran here only", l))
	}
	v.Load = LoadComparison{Bundle: MachineLoad(a), Here: MachineLoad(b)}
	v.Variables = variableDifferences(a.Manifest, b.Manifest)
	v.rank()
	for _, p := range c.Pairs {
		cv := CellVerdict{Cell: p.Label, Step: p.Step, Basis: p.Basis, Reproduced: p.Reproduced, Ratio: p.RPSRatio, Verdict: p.Verdict}
		cv.Docker = usesDocker(a.Manifest, p.A.TrialIDs) || usesDocker(b.Manifest, p.B.TrialIDs)
		v.Cells = append(v.Cells, cv)
	}
	here := map[string]report.ClaimOutcome{}
	for _, cl := range claimsB {
		here[cl.Name] = cl
	}
	seen := map[string]bool{}
	for _, ca := range claimsA {
		seen[ca.Name] = true
		cb, ok := here[ca.Name]
		cv := ClaimVerdict{Name: ca.Name, Statement: ca.Description, Bundle: ca.Outcome}
		cv.Bound = ca.Bound
		if ok {
			cv.Here, cv.Detail, cv.Estimate = cb.Outcome, cb.Detail, estimateLabel(cb)
		}
		cv.Moved = cv.Here != cv.Bundle
		v.Claims = append(v.Claims, cv)
	}
	for _, cb := range claimsB {
		if !seen[cb.Name] {
			v.Claims = append(v.Claims, ClaimVerdict{Name: cb.Name, Statement: cb.Description, Bound: cb.Bound, Here: cb.Outcome,
				Estimate: estimateLabel(cb), Detail: cb.Detail, Moved: true})
		}
	}
	v.explain()
	return v, nil
}

// rank sets Changes and Rounded from Variables, Load and Environment: the
// variables first, then the machine's load when its state differs or
// either side was busy, then the environment (Changes).
func (v *Verdict) rank() {
	v.Changes = nil
	for _, d := range v.Variables {
		v.Changes = append(v.Changes, results.Change{Rank: results.RankVariable, Name: d.Name, Bundle: d.Bundle, Here: d.Here})
	}
	if v.Load.Bundle.State != v.Load.Here.State || v.Load.Busy() {
		v.Changes = append(v.Changes, results.Change{Rank: results.RankLoad, Name: "machine load", Bundle: v.Load.Bundle.Verdict(), Here: v.Load.Here.Verdict()})
	}
	env, rounded := results.Changes(v.Environment)
	v.Changes = append(v.Changes, env...)
	v.Rounded = rounded
}

// explain names, next to each claim and cell that moved, the changes
// that can explain it, likeliest first: all of them for claims and for
// cells a docker provider deployed, the machine's (not Docker's) for the
// others.
func (v *Verdict) explain() {
	var all, machine []string
	for _, c := range v.Changes {
		all = append(all, c.Name)
		if !c.Docker {
			machine = append(machine, c.Name)
		}
	}
	for i := range v.Claims {
		v.Claims[i].Explain = nil
		if v.Claims[i].Moved {
			v.Claims[i].Explain = all
		}
	}
	for i := range v.Cells {
		c := &v.Cells[i]
		c.Explain = nil
		if c.Reproduced == "no" {
			c.Explain = machine
			if c.Docker {
				c.Explain = all
			}
		}
	}
}

// usesDocker reports whether one of the trials ran a service with the
// docker provider.
func usesDocker(m *results.Manifest, trials []string) bool {
	for _, id := range trials {
		if t := m.Trial(id); t != nil && t.RanOn("docker") {
			return true
		}
	}
	return false
}

// ClaimsFailed counts the claims that fail here (inconclusive ones do not
// count: they are noise, not a contradiction).
func (v *Verdict) ClaimsFailed() int {
	n := 0
	for _, c := range v.Claims {
		if c.Here == claims.Fails {
			n++
		}
	}
	return n
}

// CellsNotReproduced counts the cells judged and not reproduced.
func (v *Verdict) CellsNotReproduced() int {
	n := 0
	for _, c := range v.Cells {
		if c.Reproduced == "no" {
			n++
		}
	}
	return n
}

// Summary is the verdict's last line.
func (v *Verdict) Summary() string {
	var parts []string
	if len(v.Claims) > 0 {
		same, hold := 0, 0
		for _, c := range v.Claims {
			if !c.Moved {
				same++
			}
			if c.Here == claims.Holds {
				hold++
			}
		}
		parts = append(parts, fmt.Sprintf("%d of %d claims hold here (%d with the bundle's outcome, %d fail)", hold, len(v.Claims), same, v.ClaimsFailed()))
	}
	judged, yes, noisy := 0, 0, 0
	for _, c := range v.Cells {
		if c.Reproduced == report.ReproducedTooNoisy {
			noisy++
		} else if c.Reproduced != "" {
			judged++
		}
		if c.Reproduced == "yes" {
			yes++
		}
	}
	cells := fmt.Sprintf("%d of %d cells reproduced (%d could not be judged", yes, len(v.Cells), len(v.Cells)-judged)
	if noisy > 0 {
		cells += fmt.Sprintf("; %d too noisy: req/s ratio interval wider than ×/÷%g, more repetitions or a quieter machine would narrow it", noisy, report.TooNoisyFactor)
	}
	parts = append(parts, cells+")")
	if len(v.Variables) > 0 {
		parts = append(parts, fmt.Sprintf("%d variables set otherwise here", len(v.Variables)))
	}
	env := fmt.Sprintf("%d environment fields differ", len(v.Environment))
	if v.Rounded > 0 {
		env += fmt.Sprintf(" (%s)", roundedText(v.Rounded))
	}
	parts = append(parts, env)
	if e := v.Load.Explain(); e != "" {
		parts = append(parts, e)
	}
	return strings.Join(parts, "; ")
}

// Write prints the verdict as text, markdown or json.
func (v *Verdict) Write(w io.Writer, format string) error {
	switch format {
	case "", "text":
		return v.write(w, false)
	case "markdown", "md":
		return v.write(w, true)
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	return fmt.Errorf("writing the verdict: unknown format %q (want text, markdown or json)", format)
}

func (cv CellVerdict) MarshalJSON() ([]byte, error) {
	type plain CellVerdict
	return json.Marshal(struct {
		plain
		Ratio     float64  `json:"rps_ratio"`
		RatioLow  *float64 `json:"rps_ratio_low"`
		RatioHigh *float64 `json:"rps_ratio_high"`
	}{plain(cv), cv.Ratio.Value, finiteOrNil(cv.Ratio.Low), finiteOrNil(cv.Ratio.High)})
}

func finiteOrNil(f float64) *float64 {
	if f != f || f > 1e300 || f < -1e300 {
		return nil
	}
	return &f
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func ratioText(i stats.Interval) string {
	if i.Value != i.Value || i.Value == 0 {
		return "-"
	}
	if !i.HasCI() {
		return fmt.Sprintf("×%.3f", i.Value)
	}
	return fmt.Sprintf("×%.3f [%.3f, %.3f]", i.Value, i.Low, i.High)
}

// maxCellRows is how many cells the text verdict lists before it lists
// only those that did not reproduce.
const maxCellRows = 8

func (v *Verdict) write(w io.Writer, md bool) error {
	var b strings.Builder
	title := fmt.Sprintf("reproduce %s (run %s of %s) here: run %s in %s", v.Bundle, v.BundleRun, v.Pipeline, v.Run, v.RunDir)
	if md {
		fmt.Fprintf(&b, "**%s**\n\n", escape.Markdown(title))
	} else {
		fmt.Fprintln(&b, title)
	}
	table := func(header []string, rows [][]string) {
		if md {
			b.WriteString("| " + strings.Join(header, " | ") + " |\n|" + strings.Repeat(" --- |", len(header)) + "\n")
			for _, r := range rows {
				for i := range r {
					r[i] = escape.Markdown(r[i])
				}
				b.WriteString("| " + strings.Join(r, " | ") + " |\n")
			}
			b.WriteString("\n")
			return
		}
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  "+strings.Join(header, "\t"))
		for _, r := range rows {
			fmt.Fprintln(tw, "  "+strings.Join(r, "\t"))
		}
		tw.Flush()
	}
	section := func(s string) {
		if md {
			fmt.Fprintf(&b, "%s:\n\n", s)
		} else {
			fmt.Fprintf(&b, "\n%s\n", s)
		}
	}
	if len(v.Claims) > 0 {
		section("claims")
		var rows [][]string
		for _, c := range v.Claims {
			moved := ""
			if c.Moved {
				moved = "moved; differs here: " + names(c.Explain)
			}
			rows = append(rows, []string{c.Name, orDash(c.Bundle), orDash(c.Here), orDash(c.Estimate), orDash(c.Bound), orDash(moved)})
		}
		table([]string{"claim", "in the bundle", "here", "estimate here [95% CI]", "bound", "moved"}, rows)
	}
	section("cells (req/s here / in the bundle, compare's rule)")
	// On a terminal, a study of many cells lists those that did not
	// reproduce (or could not be judged) and counts the others, so that
	// the verdict fits a screen; the markdown page and --json list all.
	fold := !md && len(v.Cells) > maxCellRows
	var rows [][]string
	folded := 0
	for _, c := range v.Cells {
		if fold && c.Reproduced == "yes" {
			folded++
			continue
		}
		rep := c.Reproduced
		switch rep {
		case "":
			rep = "not judged (" + c.Verdict + ")"
		case report.ReproducedTooNoisy:
			rep = report.TooNoisyText(c.Ratio)
		}
		explain := "-"
		if c.Reproduced == "no" {
			explain = "differs here: " + names(c.Explain)
		}
		label := c.Cell
		if c.Step != "" && !strings.Contains(label, c.Step) {
			label += " (" + c.Step + ")"
		}
		rows = append(rows, []string{label, rep, ratioText(c.Ratio), c.Basis, explain})
	}
	if len(rows) > 0 {
		table([]string{"cell", "reproduced", "ratio [95% CI]", "basis", "moved"}, rows)
	}
	switch {
	case folded > 0 && len(rows) == 0:
		fmt.Fprintf(&b, "  all %d cells reproduced (--format markdown or json lists each)\n", folded)
	case folded > 0:
		fmt.Fprintf(&b, "  and %d more cells reproduced (--format markdown or json lists each)\n", folded)
	}

	loadMoved := false
	for _, c := range v.Changes {
		loadMoved = loadMoved || c.Rank == results.RankLoad
	}
	if loadMoved {
		title := "machine load (bundle → here)"
		if v.Load.Busy() {
			title += ": a busy machine shares its CPUs with the loader and the server, so absolute figures (req/s, latency tails) of the two runs are not comparable, whatever else differs"
		}
		section(title)
		table([]string{"", "bundle", "here"}, [][]string{
			{"load average before the first trial", v.Load.Bundle.AverageText(), v.Load.Here.AverageText()},
			{"load average at the trials' start", v.Load.Bundle.TrialsText(), v.Load.Here.TrialsText()},
			{"quiet checks before the loads", v.Load.Bundle.QuietText(), v.Load.Here.QuietText()},
		})
	}
	section("what differs (bundle → here), likeliest cause first")
	line := func(s string) {
		b.WriteString("  " + s + "\n")
		if md {
			b.WriteString("\n")
		}
	}
	if len(v.Changes) > 0 {
		var rows [][]string
		for _, c := range v.Changes {
			name := c.Name
			if c.Rank == results.RankVariable {
				name = "variable " + name
			}
			rows = append(rows, []string{name, orDash(c.Bundle), orDash(c.Here)})
		}
		table([]string{"", "bundle", "here"}, rows)
	}
	switch {
	case len(v.Changes) == 0 && v.Rounded == 0:
		line(fmt.Sprintf("nothing: the same variables, every recorded field the same, machine load %s on both sides", v.Load.Here.Verdict()))
	case len(v.Changes) == 0:
		line(fmt.Sprintf("nothing but %s: the same variables, machine load %s on both sides", roundedText(v.Rounded), v.Load.Here.Verdict()))
	case v.Rounded > 0:
		line("and " + roundedText(v.Rounded) + " (not listed)")
	}
	for _, m := range v.Warnings {
		if md {
			m = escape.Markdown(m)
		}
		fmt.Fprintf(&b, "warning: %s\n", m)
	}
	if md {
		fmt.Fprintf(&b, "%s\n", escape.Markdown(v.Summary()))
	} else {
		fmt.Fprintf(&b, "\nsummary: %s\n", v.Summary())
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// names is what a moved claim or cell shows of the changes that can
// explain it: the first three names, likeliest first, and how many more
// the verdict's list below holds.
func names(s []string) string {
	const shown = 3
	switch {
	case len(s) == 0:
		return "nothing recorded"
	case len(s) <= shown:
		return strings.Join(s, ", ")
	}
	return fmt.Sprintf("%s (+%d more)", strings.Join(s[:shown], ", "), len(s)-shown)
}

func roundedText(n int) string {
	if n == 1 {
		return "1 sysctl within 1%"
	}
	return fmt.Sprintf("%d sysctls within 1%%", n)
}

// estimateLabel is a claim's estimate with its interval: "0.353 [0.222,
// 0.562]", or the share of repetitions for a verdict claim.
func estimateLabel(o report.ClaimOutcome) string {
	nan := func(f float64) bool { return f != f }
	if nan(o.Estimate) {
		return ""
	}
	if o.Kind == claims.KindVerdict {
		return fmt.Sprintf("%.0f%% of %d", 100*o.Estimate, o.N)
	}
	if nan(o.Low) || nan(o.High) {
		return fmt.Sprintf("%.4g", o.Estimate)
	}
	return fmt.Sprintf("%.4g [%.4g, %.4g]", o.Estimate, o.Low, o.High)
}
