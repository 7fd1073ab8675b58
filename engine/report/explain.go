package report

import (
	"fmt"
	"image"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/benchflow/benchflow/engine/collect"
	"github.com/benchflow/benchflow/engine/results"
)

// CellVerdict is what limited a cell's repetitions (the verdicts of their
// trials rows) and where the machine's CPU went, averaged over them.
type CellVerdict struct {
	// Kind is the most frequent verdict of the repetitions; Count of Of
	// repetitions had it, Evidence is the first one's.
	Kind     string `json:"verdict"`
	Evidence string `json:"verdict_evidence"`
	Count    int    `json:"count"`
	Of       int    `json:"of"`
	// Others lists the other verdicts with their counts ("noisy 1").
	Others []string `json:"other_verdicts,omitempty"`
	// CPU is the mean budget of the repetitions (percent of one core).
	CPU *results.CPUBudget `json:"cpu,omitempty"`
	// BusyStarts counts repetitions that started on a busy machine.
	BusyStarts int `json:"busy_starts"`
}

// Label is "server-bound (evidence)", with "2/3" when the repetitions
// disagree and the busy starts: "noisy 2/3 (…), 1 busy start".
func (v *CellVerdict) Label() string {
	if v == nil || v.Kind == "" {
		return "-"
	}
	l := v.Kind
	if v.Count < v.Of {
		l += fmt.Sprintf(" %d/%d", v.Count, v.Of)
	}
	if v.Evidence != "" {
		l += " (" + v.Evidence + ")"
	}
	if v.BusyStarts > 0 {
		l += fmt.Sprintf(", %d busy start", v.BusyStarts)
		if v.BusyStarts > 1 {
			l += "s"
		}
	}
	return l
}

// Word is the verdict as the tables show it: the kind, "2/3" when the
// repetitions disagree, and the note that holds its evidence ("noisy
// 2/3 [1]"); the evidence itself is in the notes below the table
// (Summary.verdictNotes).
func (v *CellVerdict) Word(note int) string {
	if v == nil || v.Kind == "" {
		return "-"
	}
	l := v.Kind
	if v.Count < v.Of {
		l += fmt.Sprintf(" %d/%d", v.Count, v.Of)
	}
	if note > 0 {
		l += fmt.Sprintf(" [%d]", note)
	}
	return l
}

// verdictNotes numbers the cells whose verdict has evidence or busy
// starts, in table order: notes[i] is the note of the i-th such cell
// ("[1] size=6: noisy 2/3 — other processes used 96% of a core …, 1 busy
// start") and num maps a cell to its number (0 for none).
func (s *Summary) verdictNotes() (notes []string, num map[*Cell]int) {
	num = map[*Cell]int{}
	for _, c := range s.Cells {
		v := c.Verdict
		if v == nil || v.Kind == "" || v.Evidence == "" && v.BusyStarts == 0 {
			continue
		}
		num[c] = len(notes) + 1
		n := fmt.Sprintf("[%d] %s: %s", len(notes)+1, c.Label(), v.Kind)
		if v.Count < v.Of {
			n += fmt.Sprintf(" %d/%d", v.Count, v.Of)
		}
		if v.Evidence != "" {
			n += " — " + v.Evidence
		}
		if v.BusyStarts > 0 {
			n += fmt.Sprintf("; %d busy start", v.BusyStarts)
			if v.BusyStarts > 1 {
				n += "s"
			}
		}
		notes = append(notes, n)
	}
	return notes, num
}

// hasVerdicts reports whether some cell has a verdict (the verdict column
// is shown only then).
func (s *Summary) hasVerdicts() bool {
	for _, c := range s.Cells {
		if c.Verdict != nil {
			return true
		}
	}
	return false
}

// explain fills each cell's verdict and budget from its repetitions'
// trials rows, and the notices (warnings shown above the table) about
// what is known to distort a comparison: a busy machine, fuse-overlayfs,
// Docker's userland proxy.
func (s *Summary) explain(run *results.Run, facts *trialFacts, procs map[string]map[string]float64) {
	for _, c := range s.Cells {
		c.Verdict = cellVerdict(c, facts.rows)
	}
	s.Notices = append(s.Notices, facts.busyNotice()...)
	env := map[string]any{}
	if run.Manifest != nil && run.Manifest.Environment != nil {
		env = run.Manifest.Environment
	}
	driver, _ := env["docker_storage_driver"].(string)
	if n := s.processNotice(procs, "fuse-overlayfs",
		"every file a container opens crosses a FUSE filesystem (Docker's storage driver here is fuse-overlayfs), which caps what a container serves from its image; compare container variants with each other, or serve from a volume"); n != "" {
		s.Notices = append(s.Notices, n)
	} else if driver == "fuse-overlayfs" && usesDocker(run) {
		s.Notices = append(s.Notices, "Docker's storage driver is fuse-overlayfs: files a container opens from its image cross a FUSE filesystem (the accounting saw no fuse-overlayfs CPU in this run)")
	}
	if n := s.processNotice(procs, "docker-proxy",
		"published ports go through Docker's userland proxy, a user-space copy of every byte (userland-proxy = true in the engine's settings)"); n != "" {
		s.Notices = append(s.Notices, n)
	}
}

func cellVerdict(c *Cell, rows map[[2]string]*rowFacts) *CellVerdict {
	v := &CellVerdict{}
	count := map[string]int{}
	first := map[string]string{}
	var order []string
	var sum results.CPUBudget
	budgets := 0
	for _, id := range c.TrialIDs {
		t := rows[[2]string{id, c.Step}]
		if t == nil {
			continue
		}
		if t.busy {
			v.BusyStarts++
		}
		if t.verdict != "" {
			if count[t.verdict] == 0 {
				order = append(order, t.verdict)
				first[t.verdict] = t.evidence
			}
			count[t.verdict]++
			v.Of++
		}
		if t.cpu.TotalPct > 0 {
			budgets++
			sum.TotalPct += t.cpu.TotalPct
			sum.LoaderPct += t.cpu.LoaderPct
			sum.ServicePct += t.cpu.ServicePct
			sum.InfraPct += t.cpu.InfraPct
			sum.KernelPct += t.cpu.KernelPct
			sum.OtherPct += t.cpu.OtherPct
			sum.IdlePct += t.cpu.IdlePct
			sum.StealPct += t.cpu.StealPct
			sum.UnattributedPct += t.cpu.UnattributedPct
		}
	}
	if v.Of == 0 && budgets == 0 {
		return nil
	}
	sort.SliceStable(order, func(i, j int) bool { return count[order[i]] > count[order[j]] })
	if len(order) > 0 {
		v.Kind, v.Evidence, v.Count = order[0], first[order[0]], count[order[0]]
		for _, k := range order[1:] {
			v.Others = append(v.Others, fmt.Sprintf("%s %d", k, count[k]))
		}
	}
	if budgets > 0 {
		n := float64(budgets)
		v.CPU = &results.CPUBudget{
			TotalPct: sum.TotalPct / n, LoaderPct: sum.LoaderPct / n, ServicePct: sum.ServicePct / n,
			InfraPct: sum.InfraPct / n, KernelPct: sum.KernelPct / n, OtherPct: sum.OtherPct / n,
			IdlePct: sum.IdlePct / n, StealPct: sum.StealPct / n, UnattributedPct: sum.UnattributedPct / n,
		}
	}
	return v
}

// busyNotice warns about trials that started on a busy machine or were
// noisy, led by the machine's state in the words of results.MachineState
// (the words of the page's environment row and of reproduce).
func (f *trialFacts) busyNotice() []string {
	busy, total, worst, top, noisy := f.busy, f.total, f.worst, f.top, f.noisy
	var out []string
	if st := f.machine.State(); st == results.MachineBusy || st == results.MachinePartly {
		out = append(out, "machine: "+f.machine.String())
	}
	if busy > 0 {
		m := fmt.Sprintf("%d of %d trials started on a busy machine: processes outside the run used up to %.0f%% of a core just before the load", busy, total, worst)
		if top != "" {
			m += " (busiest: " + top + ")"
		}
		out = append(out, m+"; their numbers include that load — re-run them on a quiet machine")
	}
	if noisy > 0 {
		out = append(out, fmt.Sprintf("%d trial(s) are noisy: processes outside the run used 20%% of a core or more during the load (see verdict_evidence in trials.parquet)", noisy))
	}
	if n := len(f.rerun); n > 0 {
		list := f.rerun
		if n > 6 {
			list = append(append([]string(nil), list[:6]...), fmt.Sprintf("%d more", n-6))
		}
		m := fmt.Sprintf("%d %s found the machine busy and %s run again (busy_rerun): %s; the busy %s in the tables (discarded = true), left out of every estimate",
			n, pick(n, "attempt", "attempts"), pick(n, "was", "were"), strings.Join(list, ", "), pick(n, "attempt is", "attempts are"))
		if f.stillBusy > 0 {
			m += fmt.Sprintf("; %d still busy after the last re-run, kept and flagged", f.stillBusy)
		}
		out = append(out, m)
	}
	return out
}

// pick is one when n is 1, else many.
func pick(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// processNotice reports the cells in which a process name used at least
// 1% of a core on average, with its measured cost, or "".
func (s *Summary) processNotice(procs map[string]map[string]float64, name, why string) string {
	var parts []string
	for _, c := range s.Cells {
		if len(c.TrialIDs) == 0 {
			continue
		}
		sum := 0.0
		for _, id := range c.TrialIDs {
			sum += procs[id][name]
		}
		if mean := sum / float64(len(c.TrialIDs)); mean >= 1 {
			unit := ""
			if len(parts) == 0 {
				unit = " of a core"
			}
			parts = append(parts, fmt.Sprintf("%.0f%%%s during %s", mean, unit, cellLabel(s, c)))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf("%s used %s: %s", name, strings.Join(parts, "; "), why)
}

// usesDocker reports whether a trial of the run used a docker provider.
func usesDocker(run *results.Run) bool {
	if run.Manifest == nil {
		return false
	}
	for i := range run.Manifest.Trials {
		if run.Manifest.Trials[i].RanOn("docker") {
			return true
		}
	}
	return false
}

// writeNotices prints the notices, before the table.
func (s *Summary) writeNotices(w io.Writer, prefix string) {
	for _, n := range s.Notices {
		fmt.Fprintf(w, "%swarning: %s\n", prefix, lineText(prefix, n))
	}
	if len(s.Notices) > 0 {
		fmt.Fprintln(w)
	}
}

// cpuParts are the budget parts the "where the CPU went" chart stacks, with
// their colours.
var cpuParts = []struct{ name, color string }{
	{"loader", "#4e79a7"}, {"service", "#59a14f"}, {"infra", "#e15759"}, {"kernel", "#f28e2b"},
	{"other", "#b07aa1"}, {"unattributed", "#9c755f"}, {"idle", "#d9d9d9"}, {"steal", "#555555"},
}

// cpuStack is one cell's bar of the CPU chart: its parts in cpuParts
// order (percent of one core).
type cpuStack struct {
	Idx   int
	Label string
	Parts []float64
	Total float64
}

// cpuStacks lists the bars of the "where the CPU went" chart; nil when no
// cell has a budget.
func cpuStacks(s *Summary) []cpuStack {
	var out []cpuStack
	for i, c := range s.Cells {
		if c.Verdict == nil || c.Verdict.CPU == nil {
			continue
		}
		parts := collect.BudgetParts(*c.Verdict.CPU)
		st := cpuStack{Idx: i, Label: cellLabel(s, c), Total: c.Verdict.CPU.TotalPct}
		for _, p := range parts {
			st.Parts = append(st.Parts, p.Pct)
		}
		out = append(out, st)
	}
	return out
}

// cpuTooltip describes one bar: "service 99%, loader 19%, …".
func cpuTooltip(st cpuStack) string {
	var parts []string
	for k, v := range st.Parts {
		parts = append(parts, fmt.Sprintf("%s %.1f%%", cpuParts[k].name, v))
	}
	return fmt.Sprintf("%s: %s (of %.0f%%)", st.Label, strings.Join(parts, ", "), st.Total)
}

// cpuChartSVG draws the stacked "where the CPU went" bars, or "".
func cpuChartSVG(s *Summary) string {
	stacks := cpuStacks(s)
	if len(stacks) == 0 {
		return ""
	}
	maxT := 0.0
	for _, st := range stacks {
		maxT = max(maxT, st.Total)
	}
	_, xmax, ticks := niceAxis(0, maxT)
	var b strings.Builder
	legendH := legendRow * 2
	h := marginT + len(stacks)*(barH+6) + marginB + legendH
	x0, x1 := float64(labelW), float64(svgW-marginR)
	sx := func(v float64) float64 { return x0 + v/xmax*(x1-x0) }
	title := "Where the CPU went (% of one core, mean of the repetitions)"
	fmt.Fprintf(&b, `<svg class="chart" id="chart-cpu" width="100%%" viewBox="0 0 %d %d" role="img" aria-label="%s">`, svgW, h, esc(title))
	fmt.Fprintf(&b, `<text class="title" x="4" y="18">%s</text>`, esc(title))
	yb := float64(marginT + len(stacks)*(barH+6))
	for _, t := range ticks {
		x := sx(t.Pos)
		fmt.Fprintf(&b, `<line class="grid" x1="%s" y1="%d" x2="%s" y2="%s"/><text class="tick" x="%s" y="%s" text-anchor="middle">%s</text>`,
			f1(x), marginT, f1(x), f1(yb), f1(x), f1(yb+16), esc(t.Label+"%"))
	}
	for i, st := range stacks {
		y := float64(marginT + i*(barH+6))
		fmt.Fprintf(&b, `<g class="cell" data-series="%d"><title>%s</title>`, st.Idx, esc(cpuTooltip(st)))
		fmt.Fprintf(&b, `<text class="label" x="%s" y="%s" text-anchor="end">%s</text>`, f1(x0-6), f1(y+barH*0.7), esc(st.Label))
		at := 0.0
		for k, v := range st.Parts {
			if v <= 0 {
				continue
			}
			fmt.Fprintf(&b, `<rect x="%s" y="%s" width="%s" height="%d" fill="%s"/>`, f1(sx(at)), f1(y), f1(sx(at+v)-sx(at)), barH, cpuParts[k].color)
			at += v
		}
		b.WriteString(`</g>`)
	}
	for k, p := range cpuParts {
		lx := x0 + float64(k%4)*120
		ly := yb + 28 + float64(k/4*legendRow)
		fmt.Fprintf(&b, `<rect x="%s" y="%s" width="12" height="12" fill="%s"/><text x="%s" y="%s">%s</text>`,
			f1(lx), f1(ly), p.color, f1(lx+16), f1(ly+10), esc(p.name))
	}
	b.WriteString(`</svg>`)
	return b.String()
}

// cpuChartRaster draws the CPU chart for PNG output, or nil.
func cpuChartRaster(s *Summary) *image.RGBA {
	stacks := cpuStacks(s)
	if len(stacks) == 0 {
		return nil
	}
	maxT := 0.0
	labelW := 0
	for _, st := range stacks {
		maxT = max(maxT, st.Total)
		labelW = max(labelW, textWidth(st.Label))
	}
	labelW = min(labelW, pngW/3)
	_, xmax, ticks := niceAxis(0, maxT)
	const top = 30
	yb := top + len(stacks)*(pngBarH+6)
	h := yb + 30 + 2*18 + 10
	c := newCanvas(pngW, h)
	c.text(10, 6, "Where the CPU went (% of one core, mean of the repetitions)", black)
	x0, x1 := float64(20+labelW+8), float64(pngW-30)
	sx := func(v float64) int { return int(x0 + v/xmax*(x1-x0)) }
	for _, t := range ticks {
		x := sx(t.Pos)
		c.line(x, top, x, yb, grey, 1)
		c.text(x-textWidth(t.Label+"%")/2, yb+6, t.Label+"%", dark)
	}
	for i, st := range stacks {
		y := top + i*(pngBarH+6)
		label := clip(st.Label, labelW)
		c.text(int(x0)-8-textWidth(label), y+(pngBarH-face.Height)/2, label, black)
		at := 0.0
		for k, v := range st.Parts {
			if v <= 0 {
				continue
			}
			c.rect(sx(at), y, sx(at+v), y+pngBarH, parseColor(cpuParts[k].color))
			at += v
		}
	}
	c.line(int(x0), top, int(x0), yb, black, 1)
	for k, p := range cpuParts {
		lx := int(x0) + (k%4)*120
		ly := yb + 30 + k/4*18
		c.rect(lx, ly, lx+12, ly+12, parseColor(p.color))
		c.text(lx+16, ly, p.name, black)
	}
	return c.RGBA
}

// csvVerdictHeader are the csv columns of a cell's verdict and budget,
// present when some cell has one.
var csvVerdictHeader = []string{"verdict", "verdict_count", "verdict_of", "verdict_evidence", "busy_starts",
	"cpu_total_pct", "cpu_loader_pct", "cpu_service_pct", "cpu_infra_pct", "cpu_kernel_pct", "cpu_other_pct",
	"cpu_unattributed_pct", "cpu_idle_pct", "cpu_steal_pct"}

func (v *CellVerdict) csv() []string {
	out := make([]string, len(csvVerdictHeader))
	if v == nil {
		return out
	}
	out[0], out[1], out[2], out[3], out[4] = v.Kind, strconv.Itoa(v.Count), strconv.Itoa(v.Of), v.Evidence, strconv.Itoa(v.BusyStarts)
	if b := v.CPU; b != nil {
		for i, x := range []float64{b.TotalPct, b.LoaderPct, b.ServicePct, b.InfraPct, b.KernelPct, b.OtherPct, b.UnattributedPct, b.IdlePct, b.StealPct} {
			out[5+i] = num(x)
		}
	}
	return out
}

// writePNGFile encodes img as DIR/NAME.png.
func writePNGFile(dir, name string, img image.Image) (string, error) {
	path := filepath.Join(dir, name+".png")
	f, err := os.Create(path)
	if err != nil {
		return "", fmt.Errorf("writing charts: %w", err)
	}
	err = png.Encode(f, img)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("writing %s: %w", path, err)
	}
	return path, nil
}
