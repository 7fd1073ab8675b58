package run

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/benchflow/benchflow/engine/envinfo"
	"github.com/benchflow/benchflow/engine/load"
	"github.com/benchflow/benchflow/engine/pipeline"
	"github.com/benchflow/benchflow/engine/plan"
	"github.com/benchflow/benchflow/engine/redact"
	"github.com/benchflow/benchflow/engine/report"
	"github.com/benchflow/benchflow/engine/results"
	"github.com/benchflow/benchflow/engine/scratch"
	"github.com/benchflow/benchflow/providers"
)

// Options configure Apply.
type Options struct {
	OutDir  string // results root, default "results"
	Resume  string // an existing run directory to complete
	Force   bool   // resume even if the pipeline or variables changed
	Version string // benchflow version recorded in the manifest
	// Requesters builds the requester of a load step's request script
	// (script = "…"); nil: such a step fails, saying request scripts are
	// not available in this build.
	Requesters RequesterFactory
	// Reporter receives progress; nil means silent.
	Reporter Reporter
	// NoGC skips removing leftovers of crashed runs before starting.
	NoGC bool
	// OnLoadStart, when set, is called as each load of a trial begins
	// (load and warm steps run in this process, not capacity searches or
	// agents) with the run, trial and step and the load's Observer: live
	// metrics, trial by trial (apply --metrics-addr).
	OnLoadStart func(runID, trialID, step string, o *load.Observer)
}

// Summary is what Apply returns.
type Summary struct {
	RunID   string
	Dir     string
	Status  string // results.RunOK, RunFailed, RunInterrupted
	Trials  int
	OK      int
	Failed  int
	Skipped int // already complete (resume)
	// Reruns counts the attempts discarded because the machine was busy
	// (busy_rerun); BusyKept the trials still busy after the last re-run.
	Reruns, BusyKept int
	// Claims are the pipeline's claims judged on the run (also in
	// claims.parquet); empty without claims.
	Claims []report.ClaimOutcome
}

// ErrTrialsFailed is returned (wrapped) when at least one trial failed.
var ErrTrialsFailed = errors.New("some trials failed")

// ErrInterrupted is returned (wrapped) when the run was cancelled.
var ErrInterrupted = errors.New("interrupted")

// Runner is one run of a plan: New creates it, Apply runs it (once), and
// Kill is what a second Ctrl-C calls while Apply runs. There is no
// package-level state: each Runner tears down only what it started.
type Runner struct {
	plan *plan.Plan
	opts Options
	rep  Reporter
	w    *results.Writer

	mu     sync.Mutex
	active map[*liveService]bool
	kept   map[string]*liveService // service name -> deployment kept for the next trial
}

// New prepares a run of the plan; Apply runs it, and Kill, from another
// goroutine, ends it by force. Zero options take the defaults (results in
// the pipeline's output dir, no reporter).
func New(pl *plan.Plan, opts Options) *Runner {
	if opts.OutDir == "" {
		opts.OutDir = pl.Pipeline.Output.Dir
		if opts.OutDir == "" {
			opts.OutDir = "results"
		}
	}
	rep := opts.Reporter
	if rep == nil {
		rep = nopReporter{}
	}
	return &Runner{plan: pl, opts: opts, rep: rep, active: map[*liveService]bool{}, kept: map[string]*liveService{}}
}

// Kill tears down every active deployment of the run immediately
// (processes get SIGKILL), for a forced exit while Apply runs (a second
// Ctrl-C). It returns when done or after 5 seconds.
func (r *Runner) Kill() {
	r.mu.Lock()
	var live []*liveService
	for l := range r.active {
		live = append(live, l)
	}
	r.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // an already-expired context: providers skip graceful waits
	var wg sync.WaitGroup
	for _, l := range live {
		wg.Add(1)
		go func() { defer wg.Done(); l.teardown(ctx) }()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
	}
}

// Apply runs every trial of the plan and writes results: New(pl,
// opts).Apply(ctx).
func Apply(ctx context.Context, pl *plan.Plan, opts Options) (*Summary, error) {
	return New(pl, opts).Apply(ctx)
}

// Apply runs every trial of the plan and writes results. It returns an
// error wrapping ErrTrialsFailed or ErrInterrupted when not every trial
// completed, and other errors when the run could not start.
func (r *Runner) Apply(ctx context.Context) (*Summary, error) {
	if r.plan.Private() {
		// Every file of a run with a sensitive variable is private.
		defer privateUmask()()
	}
	if err := r.preflight(ctx); err != nil {
		return nil, err
	}
	w, err := r.open(ctx)
	if err != nil {
		return nil, err
	}
	defer w.Close()
	r.w = w
	return r.runTrials(ctx)
}

// open starts the run: with --resume it first re-plans with the seed the
// run recorded (when the order is random and no --seed was given, so the
// order is the same); it removes what crashed runs left (unless NoGC),
// then creates the run folder, or reopens it and checks that the resumed
// run still matches the pipeline.
func (r *Runner) open(ctx context.Context) (w *results.Writer, err error) {
	pl, opts := r.plan, r.opts
	if opts.Resume != "" && pl.Order == pipeline.OrderRandom && pl.Inputs.Seed == nil {
		// A manifest that cannot be read is reported by Resume below.
		if m, err := results.ReadManifest(opts.Resume); err == nil && m.Seed != 0 && m.Seed != pl.Seed {
			in := pl.Inputs
			seed := m.Seed
			in.Seed = &seed
			d, diags := plan.Build(pl.Pipeline, in)
			if diags.HasErrors() {
				return nil, fmt.Errorf("re-planning with seed %d failed", m.Seed)
			}
			r.plan, pl = d, d
		}
	}
	if !opts.NoGC {
		r.gc(ctx)
	}

	// Sensitive values never reach a record, a log line or the console.
	redact.Default.Add(pl.SensitiveValues()...)
	shaHex := PipelineSHA256(pl.Pipeline)
	vars := RedactedVariables(pl)
	if opts.Resume != "" && pl.Adaptive != nil {
		return nil, fmt.Errorf("resuming %s: runs with adaptive repetitions cannot be resumed yet (the rounds added depend on the results); start a new run", opts.Resume)
	}
	if opts.Resume != "" {
		w, err = results.Resume(opts.Resume)
		if err != nil {
			return nil, err // names the run directory already
		}
		if c := w.Cleanup(); c != nil {
			for _, x := range c.Removed {
				r.rep.Logf("removed what a killed run left in its results: %s", x)
			}
			for _, l := range c.Left {
				r.rep.Warnf("%s", l)
			}
		}
		opened := w
		defer func() {
			if err != nil {
				opened.Close() // the run stays as it was
			}
		}()
		if err := w.Manifest().CheckResumable(shaHex, vars); err != nil && !opts.Force {
			return nil, fmt.Errorf("resuming %s: %w (use --force to resume anyway)", opts.Resume, err)
		}
		if len(w.Manifest().Trials) != len(pl.Trials) || (pl.Order == "random" && w.Manifest().Seed != pl.Seed) {
			if w.Manifest().Seed != pl.Seed && pl.Order == "random" {
				return nil, fmt.Errorf("resuming %s: the run used seed %d; pass --seed %d", opts.Resume, w.Manifest().Seed, w.Manifest().Seed)
			}
			if !opts.Force {
				return nil, fmt.Errorf("resuming %s: %w: it has %d trials, the pipeline now has %d", opts.Resume, results.ErrPipelineChanged, len(w.Manifest().Trials), len(pl.Trials))
			}
		}
	} else {
		env := envinfo.Collect(ctx, opts.Version)
		m := &results.Manifest{
			RunID: results.NewRunID(time.Now()),
			Pipeline: results.PipelineInfo{
				Name: pl.Pipeline.Name, File: pl.Pipeline.File, SHA256: shaHex,
				PlanSHA256: pl.StudySHA256(),
				Format:     pl.Pipeline.Format, Variables: vars,
			},
			BenchflowVersion: opts.Version,
			StartedAt:        time.Now().UTC(),
			Status:           results.RunRunning,
			Order:            pl.Order,
			Seed:             pl.Seed,
			Repetitions:      repetitions(pl),
			Matrix:           matrixMap(pl),
			Environment:      env.Map(),
			OutputFormat:     pl.Pipeline.Output.Format,
			Private:          pl.Private(),
			ExcludeUnsteady:  pl.Pipeline.ExcludeUnsteady,
			Claims:           claimSpecs(pl),
		}
		for _, a := range pl.Axes {
			m.Axes = append(m.Axes, a.Name)
		}
		for _, t := range pl.Trials {
			m.Trials = append(m.Trials, results.TrialEntry{
				TrialID: t.ID, Index: t.Index, Repetition: t.Repetition,
				Params: paramsMap(t.Params), Provider: trialProvider(t), Status: results.StatusPending,
			})
		}
		name := filepath.Base(pl.Pipeline.File)
		if pl.Pipeline.Format == "star" && !strings.HasSuffix(name, ".star") {
			name += ".star"
		}
		w, err = results.Create(opts.OutDir, m, pl.Pipeline.Source, name)
		if err != nil {
			return nil, fmt.Errorf("creating the results directory: %w", err)
		}
		if err := saveSources(w, pl.Pipeline); err != nil {
			w.Close()
			return nil, fmt.Errorf("creating the results directory: %w", err)
		}
	}
	return w, nil
}

// runTrials runs the trials in order (skipping those a resumed run
// completed), records each, adds adaptive rounds, and finishes the run.
func (r *Runner) runTrials(ctx context.Context) (*Summary, error) {
	pl, opts, rep, w := r.plan, r.opts, r.rep, r.w
	m := w.Manifest()
	s := &Summary{RunID: m.RunID, Dir: w.Dir(), Trials: len(pl.Trials)}
	rep.RunStart(m.RunID, w.Dir(), len(pl.Trials))

	interrupted, aborted := false, false
	// busyRun counts the attempts in a row that found the machine busy;
	// giveUp is set once they reach busy_give_up.
	busyRun, giveUp := 0, false
	// ran counts the trials run (not skipped by a resume);
	// firstFailures the failure keys of the first two (failureKey).
	ran, firstFailures := 0, []string{}
	var ad *adaptive
	if pl.Adaptive != nil {
		ad = newAdaptive(pl)
	}
	for i := 0; i < len(pl.Trials); i++ {
		t := pl.Trials[i]
		if opts.Resume != "" && m.Done(t.ID) {
			s.Skipped++
			continue
		}
		if ctx.Err() != nil {
			interrupted = true
			break
		}
		var next *plan.Trial
		if i+1 < len(pl.Trials) {
			next = pl.Trials[i+1]
		}
		rec, elapsed := r.runTrial(ctx, t, next)
		total := elapsed
		// A trial that found the machine busy runs again at once, before
		// the next one (the order of the others is kept), up to
		// busy_rerun times, while re-running can help: once busy_give_up
		// attempts in a row found the machine busy, busy trials are kept,
		// flagged, for the rest of the run (giveUp). The busy attempts
		// are recorded, discarded.
		var failed error
		for attempt := 1; ; attempt++ {
			rec.Attempt = attempt
			why := busyReason(rec)
			if why == "" {
				busyRun = 0
			} else {
				busyRun++
				rep.Logf("trial %s: attempt %d found the machine busy: %s", t.ID, attempt, why)
				if g := pl.Pipeline.BusyGiveUp; g > 0 && busyRun >= g && !giveUp && pl.Pipeline.BusyRerun > 0 {
					giveUp = true
					rep.Warnf("the machine was busy for %d attempts in a row (last: %s): busy trials are no longer run again in this run; they are kept, flagged noisy (busy_give_up = %d; 0 re-runs them all)", busyRun, shortWhy(why), g)
				}
			}
			if why == "" || giveUp || attempt > pl.Pipeline.BusyRerun || ctx.Err() != nil {
				if why != "" && pl.Pipeline.BusyRerun > 0 {
					s.BusyKept++
					if !giveUp {
						rep.Warnf("trial %s: the machine was still busy after %d re-runs: this attempt is kept, flagged (%s)", t.ID, pl.Pipeline.BusyRerun, shortWhy(why))
					}
				}
				break
			}
			r.discard(rec, attempt, why)
			redactRecord(rec)
			if failed = w.CommitTrial(rec); failed != nil {
				break
			}
			s.Reruns++
			rep.Logf("trial %s: attempt %d discarded (kept in the tables as %s), running it again (%d of at most %d re-runs)", t.ID, attempt, rec.TrialID, attempt, pl.Pipeline.BusyRerun)
			rec, elapsed = r.runTrial(ctx, t, next)
			total += elapsed
		}
		// The console shows this attempt's own time, and which attempt
		// of how many it was.
		of := pl.Pipeline.BusyRerun + 1
		if giveUp && rec.Attempt < of {
			of = rec.Attempt
		}
		flagged := ""
		if why := busyReason(rec); why != "" {
			flagged = shortWhy(why)
		}
		rep.TrialAttempt(t, rec.Attempt, of, flagged)
		redactRecord(rec)
		if failed == nil {
			failed = w.CommitTrial(rec)
		}
		if err := failed; err != nil {
			return r.stopUnrecorded(t, rec, elapsed, s, err)
		}
		rep.TrialDone(t, rec, elapsed)
		if ad != nil {
			ad.observe(t, rec, total)
		}
		switch rec.Status {
		case results.StatusOK:
			s.OK++
		case results.StatusInterrupted:
			interrupted = true
		default:
			s.Failed++
		}
		if interrupted {
			break
		}
		if rec.Status == results.StatusFailed && pl.Pipeline.OnFailure == "abort" {
			rep.Warnf("trial %s failed and on_failure = \"abort\": stopping", t.ID)
			aborted = true
			break
		}
		// The first two trials run failing the same way (the same error,
		// numbers aside) is a failure every trial would meet: a stack
		// that is not up, a tune change this host cannot make. Stop, and
		// say why, unless on_failure = "all".
		ran++
		if ran <= 2 {
			firstFailures = append(firstFailures, failureKey(rec))
		}
		if ran == 2 && firstFailures[0] != "" && firstFailures[0] == firstFailures[1] && pl.Pipeline.OnFailure != "all" {
			rep.Warnf("the first two trials failed the same way, which every trial would: stopping after %d of %d trials (on_failure = \"all\" runs them all; docs/language.md#pipeline): %s", ran, len(pl.Trials), firstLine(rec.Error))
			aborted = true
			break
		}
		if ad != nil && i == len(pl.Trials)-1 {
			r.addRound(ctx, ad, s)
		}
	}
	return r.finish(ctx, s, ad, interrupted, aborted)
}

// stopUnrecorded ends the run at trial t, whose record rec could not be
// written (err): results that cannot be written (a full disk, say) make
// further trials pointless. The trial is reported as what it is: not
// recorded.
func (r *Runner) stopUnrecorded(t *plan.Trial, rec *results.TrialRecord, elapsed time.Duration, s *Summary, err error) (*Summary, error) {
	pl, rep, w := r.plan, r.rep, r.w
	// Results that cannot be written (a full disk, say) make
	// further trials pointless: stop here. The trial is reported
	// as what it is: not recorded.
	rec.Status = results.StatusFailed
	rec.Error = redact.Default.String("recording the trial: " + err.Error())
	rep.TrialDone(t, rec, elapsed)
	s.Failed++
	r.releaseKept()
	// The manifest still says so (failed trial, failed run),
	// in place when the disk has no room for a new one.
	w.MarkUnrecorded(rec)
	if ferr := w.Finish(results.RunFailed, time.Now().UTC()); ferr != nil {
		rep.Warnf("the manifest still says running: %v (gc marks the run interrupted once there is room)", ferr)
	}
	s.Status = results.RunFailed
	rep.RunDone(s)
	return s, fmt.Errorf("recording trial %s: %w; the run stopped after %d of %d trials (completed trials are kept in %s)", t.ID, err, s.OK+s.Failed, len(pl.Trials), w.Dir())
}

// finish records how the run ended (the adaptive rounds' record, the
// status), saves the sources, finishes the manifest and judges the claims.
func (r *Runner) finish(ctx context.Context, s *Summary, ad *adaptive, interrupted, aborted bool) (*Summary, error) {
	pl, opts, rep, w := r.plan, r.opts, r.rep, r.w
	m := w.Manifest()
	status := results.RunOK
	if ad != nil {
		switch {
		case interrupted || ctx.Err() != nil:
			ad.stop("interrupted", "the run was interrupted")
		case aborted:
			ad.stop("aborted", "a trial failed and on_failure = \"abort\"")
		case ad.rec.Stopped == "":
			ad.stop("error", "the run stopped before deciding")
		}
		m.Adaptive = ad.record(pl)
		m.Repetitions = pl.Rounds()
	}
	r.releaseKept()
	if s.Failed > 0 {
		status = results.RunFailed
	}
	if s.OK+s.Skipped < len(pl.Trials) && status == results.RunOK {
		status = results.RunFailed
	}
	if interrupted {
		status = results.RunInterrupted
	}
	s.Status = status
	// Files first read while the trials ran (a request script's own
	// load()s) are kept too.
	if opts.Resume == "" {
		if err := saveSources(w, pl.Pipeline); err != nil {
			return s, fmt.Errorf("finishing the run: %w", err)
		}
	}
	if err := w.Finish(status, time.Now().UTC()); err != nil {
		return s, fmt.Errorf("finishing the run: %w", err)
	}
	if k := w.LatestKept(); k != "" {
		rep.Warnf("no trial of this run succeeded: %s still names the run before it, %s (this one is %s)", filepath.Join(filepath.Dir(w.Dir()), "latest"), k, w.Dir())
	}
	if err := r.recordClaims(w.Dir(), s); err != nil {
		rep.Warnf("%v", err)
	}
	rep.RunDone(s)
	switch {
	case interrupted:
		return s, fmt.Errorf("run %s: %w after %d of %d trials", s.RunID, ErrInterrupted, s.OK+s.Failed, len(pl.Trials))
	case status != results.RunOK:
		return s, fmt.Errorf("run %s: %w (%d of %d failed)", s.RunID, ErrTrialsFailed, len(pl.Trials)-s.OK-s.Skipped, len(pl.Trials))
	}
	return s, nil
}

// failureKey is what makes two failed trials fail "the same way": the
// error with every number masked (ports, pids, durations differ); "" for a
// trial that did not fail.
func failureKey(rec *results.TrialRecord) string {
	if rec.Status != results.StatusFailed || rec.Error == "" {
		return ""
	}
	return digitsRe.ReplaceAllString(rec.Error, "#")
}

var digitsRe = regexp.MustCompile(`[0-9]+`)

// firstLine is the first line of s.
func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// preflight asks each provider type the plan uses whether what it needs
// is there (providers.Type.Preflight) before anything starts: a stack that
// is not up stops the run here, with one error, before a run folder is
// made or latest moves.
func (r *Runner) preflight(ctx context.Context) error {
	return r.eachProviderType(ctx, func(ctx context.Context, _ string, t *providers.Type, req *providers.GCRequest) error {
		if t.Preflight == nil {
			return nil
		}
		if err := t.Preflight(ctx, req); err != nil {
			return fmt.Errorf("before the first trial: %w", err)
		}
		return nil
	})
}

// eachProviderType calls fn for each provider type the plan uses, in name
// order, with the plan's configurations of that type and at most 30 s;
// it stops at the first error.
func (r *Runner) eachProviderType(ctx context.Context, fn func(ctx context.Context, name string, t *providers.Type, req *providers.GCRequest) error) error {
	configs := ProviderConfigs(r.plan)
	names := make([]string, 0, len(configs))
	for n := range configs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		t, ok := providers.Lookup(n)
		if !ok {
			continue
		}
		tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := fn(tctx, n, t, &providers.GCRequest{Configs: configs[n], Logf: r.rep.Logf})
		cancel()
		if err != nil {
			return err
		}
	}
	return nil
}

// gc removes leftovers of crashed runs for the provider types this pipeline
// uses, and service folders of killed runs.
func (r *Runner) gc(ctx context.Context) {
	restored, err := restoreJournals()
	for _, x := range restored {
		r.rep.Warnf("restored what a killed run changed: %s", x)
	}
	if err != nil {
		r.rep.Warnf("restoring what killed runs changed: %v", err)
	}
	// A run being resumed is Resume's to clean; it stays as it is until
	// the resume writes it.
	c, err := results.CleanLeftovers(r.opts.OutDir, r.opts.Resume)
	for _, x := range c.Removed {
		r.rep.Logf("removed what a killed run left in its results: %s", x)
	}
	for _, x := range c.Restored {
		r.rep.Logf("put back a trial's part a killed commit had moved aside: %s", x)
	}
	for _, x := range c.Interrupted {
		r.rep.Logf("marked a killed run interrupted: %s", x)
	}
	for _, l := range c.Left {
		r.rep.Warnf("%s", l)
	}
	if err != nil {
		r.rep.Warnf("removing what killed runs left in %s: %v", r.opts.OutDir, err)
	}
	sr, err := scratch.Machine().Clean()
	for _, x := range sr.Removed {
		r.rep.Logf("removed what a killed benchflow left: %s", x)
	}
	for _, l := range sr.Left {
		r.rep.Warnf("%s", l)
	}
	if err != nil {
		r.rep.Warnf("removing what killed benchflow processes left: %v", err)
	}
	dirs, err := gcTempDirs()
	if err != nil {
		r.rep.Warnf("removing service folders of earlier runs: %v", err)
	}
	for _, d := range dirs {
		r.rep.Logf("removed the service folder of a killed run: %s", d)
	}
	r.eachProviderType(ctx, func(ctx context.Context, n string, t *providers.Type, req *providers.GCRequest) error {
		if t.GC == nil {
			return nil
		}
		removed, err := t.GC(ctx, req)
		if err != nil && !errors.Is(err, providers.ErrUnavailable) {
			r.rep.Warnf("removing leftovers of earlier runs (%s): %v", n, err)
		}
		for _, x := range removed {
			r.rep.Warnf("removed a leftover of a crashed run: %s", x)
		}
		return nil // one type's leftovers never stop the others'
	})
}

func repetitions(pl *plan.Plan) int {
	max := 0
	for _, t := range pl.Trials {
		if t.Repetition > max {
			max = t.Repetition
		}
	}
	return max
}

func matrixMap(pl *plan.Plan) map[string]any {
	m := map[string]any{}
	for _, a := range pl.Axes {
		var vs []any
		for _, v := range a.Values {
			vs = append(vs, plan.GoValue(v))
		}
		m[a.Name] = vs
	}
	return m
}

func paramsMap(ps []plan.Param) map[string]any {
	m := map[string]any{}
	for _, p := range ps {
		m[p.Name] = plan.GoValue(p.Value)
	}
	return m
}

func trialProvider(t *plan.Trial) string {
	var parts []string
	seen := map[string]bool{}
	for _, s := range t.Services {
		if !seen[s.Provider] {
			seen[s.Provider] = true
			parts = append(parts, s.Provider)
		}
	}
	return strings.Join(parts, ",")
}

// RedactedVariables returns the effective variable values with sensitive
// ones replaced by "(sensitive)".
func RedactedVariables(pl *plan.Plan) map[string]any {
	out := map[string]any{}
	for _, v := range pl.Pipeline.Variables {
		val, ok := pl.Vars[v.Name]
		if !ok {
			continue
		}
		if v.Sensitive {
			out[v.Name] = "(sensitive)"
			continue
		}
		out[v.Name] = plan.GoValue(val)
	}
	return out
}

// saveSources keeps in the run folder every file the pipeline loaded
// (Starlark load()) or read through its folder (file(), templatefile(),
// file blocks, body_file, script) that the run does not list yet, so that
// the run folder holds everything that ran (engine/bundle publishes it).
func saveSources(w *results.Writer, p *pipeline.Pipeline) error {
	have := map[string]bool{}
	for _, f := range w.Manifest().Pipeline.Files {
		have[f.Path] = true
	}
	var files []results.SourceFile
	for _, f := range p.Loaded {
		if !have[f.Path] {
			have[f.Path] = true
			files = append(files, results.SourceFile{Path: f.Path, Data: f.Source})
		}
	}
	self := path.Base(filepath.ToSlash(p.File))
	for _, name := range pipeline.FilesRead(p.FS) {
		if have[name] {
			continue
		}
		data, err := pipeline.ReadFile(p.FS, name)
		if err != nil {
			continue // gone since it was read: the run cannot keep it
		}
		if name == self && bytes.Equal(data, p.Source) {
			continue // the pipeline itself: pipeline.hcl / .star
		}
		have[name] = true
		files = append(files, results.SourceFile{Path: name, Data: data})
	}
	if len(files) == 0 {
		return nil
	}
	return w.SaveSources(files)
}

// tempRoot is where per-trial service folders are created.
func tempRoot() string {
	if d := os.Getenv("BENCHFLOW_TMPDIR"); d != "" {
		return d
	}
	return os.TempDir()
}

// PipelineSHA256 identifies what ran: the pipeline's source and, for a
// Starlark pipeline, every file it loaded (by path and content, in sorted
// order). A pipeline that loads nothing hashes to the sha256 of its
// source alone, as recorded by earlier versions.
func PipelineSHA256(p *pipeline.Pipeline) string {
	if len(p.Loaded) == 0 {
		sum := sha256.Sum256(p.Source)
		return hex.EncodeToString(sum[:])
	}
	h := sha256.New()
	h.Write(p.Source)
	loaded := slices.Clone(p.Loaded)
	slices.SortFunc(loaded, func(a, b pipeline.LoadedFile) int { return strings.Compare(a.Path, b.Path) })
	for _, f := range loaded {
		fmt.Fprintf(h, "\x00load %s %x", f.Path, sha256.Sum256(f.Source))
	}
	return hex.EncodeToString(h.Sum(nil))
}
