package main

import (
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/benchflow/benchflow/engine/load"
	"github.com/benchflow/benchflow/engine/measure"
	"github.com/benchflow/benchflow/engine/plan"
	"github.com/benchflow/benchflow/engine/report"
	"github.com/benchflow/benchflow/engine/results"
	"github.com/benchflow/benchflow/engine/run"
)

var _ run.Reporter = (*Console)(nil)

// Console reports to a terminal (a live status line rewritten in place) or
// to a log (one plain line per event).
type Console struct {
	W       io.Writer
	TTY     bool
	Quiet   bool // only warnings and the final summary
	Verbose bool

	mu      sync.Mutex
	total   int
	trial   *plan.Trial
	started time.Time
	step    string
	rps     float64
	line    bool // a live line is on screen
	stop    chan struct{}
	// warned lists, per warning text without its "trial X: " prefix and
	// with pids left out, the trials that gave it, the first (printed)
	// one first: each text is printed once per run.
	warned    map[string][]string
	warnOrder []string
	// loads are the current attempt's load results, for its trial line;
	// attempt, of and busy what TrialAttempt said of it.
	loads       []string
	attempt, of int
	busy        string
}

func (c *Console) clearLine() {
	if c.line {
		fmt.Fprint(c.W, "\r\033[K")
		c.line = false
	}
}

func (c *Console) println(format string, args ...any) {
	c.clearLine()
	fmt.Fprintf(c.W, format+"\n", args...)
	c.redraw()
}

func (c *Console) redraw() {
	if !c.TTY || c.Quiet || c.trial == nil {
		return
	}
	s := fmt.Sprintf("[%d/%d] %s %s  %s", c.trial.Index+1, c.total, c.trial.ID, c.trial.ParamString(),
		time.Since(c.started).Truncate(time.Second))
	if c.step != "" {
		s += "  " + c.step
	}
	if c.rps > 0 {
		s += fmt.Sprintf("  %.0f req/s", c.rps)
	}
	fmt.Fprint(c.W, "\r\033[K"+s)
	c.line = true
}

func (c *Console) RunStart(runID, dir string, trials int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.total = trials
	if !c.Quiet {
		c.println("run %s: %d trials, results in %s", runID, trials, dir)
	}
	if c.TTY && !c.Quiet && c.stop == nil {
		// Keep the elapsed time on the live line moving.
		c.stop = make(chan struct{})
		go func(stop chan struct{}) {
			t := time.NewTicker(time.Second)
			defer t.Stop()
			for {
				select {
				case <-stop:
					return
				case <-t.C:
					c.mu.Lock()
					c.redraw()
					c.mu.Unlock()
				}
			}
		}(c.stop)
	}
}

func (c *Console) TrialStart(t *plan.Trial, total int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.trial, c.started, c.step, c.rps = t, time.Now(), "provision", 0
	c.loads, c.attempt, c.of, c.busy = nil, 0, 0, ""
	c.total = total // adaptive repetitions add trials as the run goes
	if !c.TTY && c.Verbose {
		c.println("[%d/%d] trial %s %s: started", t.Index+1, total, t.ID, t.ParamString())
	}
	c.redraw()
}

func (c *Console) StepStart(t *plan.Trial, step string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.step, c.rps = step, 0
	if c.Verbose {
		c.println("  %s: %s started", t.ID, step)
	}
	c.redraw()
}

func (c *Console) LoadProgress(t *plan.Trial, step string, p load.Progress) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rps = p.RPS
	c.redraw()
}

// LoadDone keeps the load's figures for the trial's line (printed at
// once with --verbose).
func (c *Console) LoadDone(t *plan.Trial, step string, r *measure.Record) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.Quiet {
		return
	}
	p99 := 0.0
	if r.Latency != nil {
		p99 = float64(r.Latency.ValueAtQuantile(99)) / 1000
	}
	msg := fmt.Sprintf("%s %.0f req/s, p99 %.2f ms, %d errors", step, r.RPS(), p99, r.Errors)
	if r.Warning != "" {
		msg += " (" + r.Warning + ")"
	}
	c.loads = append(c.loads, msg)
	if c.Verbose {
		c.println("  %s: %s, %d requests", t.ID, msg, r.Requests)
	}
}

func (c *Console) StepDone(t *plan.Trial, step string, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil && !c.Quiet {
		c.println("  %s: %s failed: %v", t.ID, step, err)
	} else if c.Verbose {
		c.println("  %s: %s done", t.ID, step)
	}
}

// TrialAttempt notes which attempt the trial's line is about.
func (c *Console) TrialAttempt(t *plan.Trial, attempt, of int, busy string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.attempt, c.of, c.busy = attempt, of, busy
}

// TrialDone prints the trial's one line: its status and own time, the
// attempt when busy ones were discarded, and its loads' figures.
func (c *Console) TrialDone(t *plan.Trial, rec *results.TrialRecord, elapsed time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.clearLine()
	c.trial = nil
	loads := c.loads
	c.loads = nil
	if c.Quiet && rec.Status == results.StatusOK {
		return
	}
	msg := fmt.Sprintf("[%d/%d] trial %s: %s in %s", t.Index+1, c.total, strings.TrimSpace(t.ID+" "+t.ParamString()), rec.Status, fmtElapsed(elapsed))
	if c.attempt > 1 || c.busy != "" && c.of > 1 {
		msg += fmt.Sprintf(", attempt %d of %d", c.attempt, c.of)
	}
	if c.busy != "" {
		msg += ", kept flagged " + c.busy
	}
	if rec.Status == results.StatusOK && len(loads) > 0 {
		msg += " · " + strings.Join(loads, "; ")
	}
	if rec.Error != "" {
		msg += "\n    " + strings.ReplaceAll(rec.Error, "\n", "\n    ")
	}
	c.attempt, c.of, c.busy = 0, 0, ""
	fmt.Fprintln(c.W, msg)
}

// fmtElapsed is a trial's time as people read it: "5.4s", "1m12s".
func fmtElapsed(d time.Duration) string {
	if d < time.Minute {
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	return d.Truncate(time.Second).String()
}

func (c *Console) RunDone(s *run.Summary) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stop != nil {
		close(c.stop)
		c.stop = nil
	}
	c.clearLine()
	fmt.Fprintf(c.W, "run %s %s: %d ok, %d failed", s.RunID, s.Status, s.OK, s.Failed)
	if s.Skipped > 0 {
		fmt.Fprintf(c.W, ", %d already complete", s.Skipped)
	}
	fmt.Fprintf(c.W, " of %d trials", s.Trials)
	if s.Reruns > 0 {
		fmt.Fprintf(c.W, "; %d busy %s re-run and discarded", s.Reruns, map[bool]string{true: "attempt", false: "attempts"}[s.Reruns == 1])
	}
	if s.BusyKept > 0 {
		fmt.Fprintf(c.W, ", %d kept flagged busy", s.BusyKept)
	}
	fmt.Fprintf(c.W, "\nresults: %s\n", s.Dir)
	c.repeatedWarnings()
	if len(s.Claims) > 0 {
		fmt.Fprintf(c.W, "claims: %s (benchflow report %s shows them)\n", report.ClaimCounts(s.Claims), s.Dir)
	}
}

func (c *Console) Logf(format string, args ...any) {
	if !c.Verbose {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.println("  "+format, args...)
}

func (c *Console) Warnf(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	msg := fmt.Sprintf(format, args...)
	if rest, ok := strings.CutPrefix(msg, "trial "); ok {
		if id, text, ok := strings.Cut(rest, ": "); ok && !strings.Contains(id, " ") {
			if c.warned == nil {
				c.warned = map[string][]string{}
			}
			// The same warning about another process (an rlimit per
			// pid) is the same warning: key it without the pid.
			key := pidRe.ReplaceAllString(text, "pid …")
			if ids, seen := c.warned[key]; seen {
				if !slices.Contains(ids, id) {
					c.warned[key] = append(ids, id)
				}
				return
			}
			c.warned[key] = []string{id}
			c.warnOrder = append(c.warnOrder, key)
		}
	}
	c.println("warning: %s", msg)
}

// pidRe matches a process id in a warning ("for pid 4561").
var pidRe = regexp.MustCompile(`\bpid \d+`)

// repeatedWarnings prints, once at the end of the run, which trials gave a
// warning already printed for an earlier trial.
func (c *Console) repeatedWarnings() {
	for _, text := range c.warnOrder {
		ids := c.warned[text][1:] // the first trial's was printed
		if len(ids) == 0 {
			continue
		}
		short := text
		if r := []rune(short); len(r) > 80 {
			short = string(r[:80]) + "…"
		}
		list := ids
		if len(list) > 4 {
			list = append(append([]string{}, ids[:3]...), "…", ids[len(ids)-1])
		}
		c.println("warning: %d more trials (%s) gave the same warning: %s", len(ids), strings.Join(list, ", "), short)
	}
}
