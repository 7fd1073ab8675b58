package run

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/benchflow/benchflow/engine/collect"
	"github.com/benchflow/benchflow/engine/diag"
	"github.com/benchflow/benchflow/engine/load"
	"github.com/benchflow/benchflow/engine/measure"
	"github.com/benchflow/benchflow/engine/pipeline"
	"github.com/benchflow/benchflow/engine/plan"
	"github.com/benchflow/benchflow/engine/redact"
	"github.com/benchflow/benchflow/engine/results"
	"github.com/benchflow/benchflow/engine/steps"
	"github.com/benchflow/benchflow/engine/tailbuf"
	"github.com/benchflow/benchflow/engine/tune"
	"github.com/benchflow/benchflow/providers"
)

// errSkipped marks a step not run because a step it waits for failed.
var errSkipped = errors.New("skipped: a step it waits for failed")

// RequesterFactory builds a request-script requester for load steps with
// script = "…": Options.Requesters. The command passes
// engine/starconf/script.NewRequester, so engine/run does not import
// Starlark.
type RequesterFactory func(fsys fs.FS, path string, base string) (load.Requester, error)

// watchServices cancels the trial when a provisioned service dies while
// steps run, recording why (the provider's Alive error quotes its output).
func (tr *trialRun) watchServices(ctx context.Context, cancel context.CancelFunc) {
	t := time.NewTicker(300 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		tr.mu.Lock()
		var live []*liveService
		for _, name := range tr.svcOrder {
			if l := tr.services[name]; l != nil && l.dep != nil {
				live = append(live, l)
			}
		}
		tr.mu.Unlock()
		for _, l := range live {
			lv, ok := l.dep.(providers.Liveness)
			if !ok {
				continue
			}
			actx, acancel := context.WithTimeout(ctx, 5*time.Second)
			err := lv.Alive(actx)
			acancel()
			if err != nil && ctx.Err() == nil {
				tr.mu.Lock()
				if tr.died == nil {
					tr.died = fmt.Errorf("service %q stopped during the trial: %w", l.name, err)
				}
				tr.mu.Unlock()
				cancel()
				return
			}
		}
	}
}

func (tr *trialRun) serviceDied() error {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.died
}

func (tr *trialRun) runDAG(parent context.Context) error {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	watchDone := make(chan struct{})
	go func() { defer close(watchDone); tr.watchServices(ctx, cancel) }()
	defer func() { cancel(); <-watchDone }()
	nodes := tr.r.plan.Steps
	done := map[string]chan struct{}{}
	var mu sync.Mutex
	errs := map[string]error{}
	collectors := map[string][]*plan.StepNode{}
	for _, n := range nodes {
		done[n.Addr()] = make(chan struct{})
		if n.During != "" {
			collectors[n.During] = append(collectors[n.During], n)
		}
	}
	var wg sync.WaitGroup
	for _, n := range nodes {
		if n.During != "" {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(done[n.Addr()])
			for _, d := range n.Deps {
				select {
				case <-done[d]:
				case <-ctx.Done():
				}
				mu.Lock()
				depErr := errs[d]
				mu.Unlock()
				if depErr != nil {
					mu.Lock()
					errs[n.Addr()] = errSkipped
					mu.Unlock()
					return
				}
			}
			var err error
			if ctx.Err() != nil {
				err = ctx.Err()
			} else {
				tr.r.rep.StepStart(tr.trial, n.Addr())
				err = tr.runStep(ctx, n, collectors[n.Addr()])
				tr.r.rep.StepDone(tr.trial, n.Addr(), err)
			}
			mu.Lock()
			errs[n.Addr()] = err
			mu.Unlock()
		}()
	}
	wg.Wait()
	if err := tr.serviceDied(); err != nil && parent.Err() == nil {
		return err
	}
	for _, n := range nodes {
		if err := errs[n.Addr()]; err != nil && !errors.Is(err, errSkipped) {
			return fmt.Errorf("step %s: %w", n.Addr(), err)
		}
	}
	if parent.Err() != nil {
		return parent.Err()
	}
	return nil
}

func (tr *trialRun) runStep(ctx context.Context, n *plan.StepNode, collects []*plan.StepNode) error {
	cfg, d := tr.te.Step(n.Step)
	if d.HasErrors() {
		return diag.Err(d)
	}
	run := executors[n.Step.Kind]
	if run == nil {
		return fmt.Errorf("step kind %q cannot run on its own", n.Step.Kind)
	}
	return run(ctx, stepTrial{tr, collects}, n.Step, cfg)
}

// stepTrial is what a step kind's executor sees of the trial: the trial
// plus the collect steps that run during this step.
type stepTrial struct {
	tr       *trialRun
	collects []*plan.StepNode
}

func (t stepTrial) Provision(ctx context.Context, names []string) error {
	for _, name := range names {
		var svc *pipeline.Service
		for _, s := range t.tr.r.plan.Pipeline.Services {
			if s.Name == name {
				svc = s
			}
		}
		if svc == nil {
			return fmt.Errorf("no service named %q", name)
		}
		if err := t.tr.provision(ctx, svc); err != nil {
			return err
		}
	}
	return nil
}

func (t stepTrial) Tune(ctx context.Context, c *pipeline.TuneConfig) error { return t.tr.tune(ctx, c) }

func (t stepTrial) Check(ctx context.Context, c *pipeline.CheckConfig) error { return check(ctx, c) }

func (t stepTrial) Exec(ctx context.Context, name string, c *pipeline.ExecConfig) error {
	return t.tr.exec(ctx, name, c)
}

func (t stepTrial) Load(ctx context.Context, st *pipeline.Step, c *steps.LoadConfig) error {
	return t.tr.load(ctx, st, c, t.collects)
}

// servicePIDs returns the processes of the named services (all when names
// is empty).
func (tr *trialRun) serviceProcs(ctx context.Context, names []string) []providers.Process {
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	tr.mu.Lock()
	var live []*liveService
	for _, name := range tr.svcOrder {
		if len(want) == 0 || want[name] {
			if l := tr.services[name]; l != nil && l.dep != nil {
				live = append(live, l)
			}
		}
	}
	agents := append([]providers.ProcessReporter(nil), tr.agents...)
	tr.mu.Unlock()
	var out []providers.Process
	for _, l := range live {
		if pr, ok := l.dep.(providers.ProcessReporter); ok {
			ps, err := pr.Processes(ctx)
			if err == nil {
				out = append(out, ps...)
			}
		}
	}
	return append(out, agentProcs(ctx, agents)...)
}

func (tr *trialRun) tune(ctx context.Context, c *pipeline.TuneConfig) error {
	for _, n := range c.Services {
		if _, ok := tr.services[n]; !ok {
			return fmt.Errorf("services: no provisioned service named %q", n)
		}
	}
	rl, err := tune.ParseRlimits(c.Rlimits, c.Nofile)
	if err != nil {
		return err
	}
	s := tune.Settings{Sysctl: c.Sysctl, Rlimits: rl, Nice: c.Nice, Optional: c.Optional, Owner: journalOwner(), Alive: journalAlive}
	if c.ServiceCPUs != "" {
		if s.ServiceCPUs, err = tune.ParseCPUList(c.ServiceCPUs); err != nil {
			return err
		}
	}
	if c.LoaderCPUs != "" {
		if s.LoaderCPUs, err = tune.ParseCPUList(c.LoaderCPUs); err != nil {
			return err
		}
	}
	if len(rl) > 0 || len(s.ServiceCPUs) > 0 || c.Nice != nil {
		for _, p := range tr.serviceProcs(ctx, c.Services) {
			if p.Role == "" || p.Role == "service" {
				s.PIDs = append(s.PIDs, p.PID)
			}
		}
		if len(s.PIDs) == 0 {
			msg := "no service process to apply process settings to (the provider reports none)"
			if !c.Optional {
				return errors.New(msg)
			}
			tr.r.rep.Warnf("trial %s: %s", tr.trial.ID, msg)
		}
	}
	undo, err := tune.Apply(ctx, s, func(w string) { tr.r.rep.Warnf("trial %s: %s", tr.trial.ID, w) })
	if undo != nil {
		tr.pushUndo("tune settings", func(context.Context) error { return undo.Restore() })
	}
	return err
}

func check(ctx context.Context, c *pipeline.CheckConfig) error {
	timeout := 10 * time.Second
	if c.Timeout != "" {
		timeout, _ = plan.ParseDuration(c.Timeout)
	}
	method := c.Method
	if method == "" {
		method = http.MethodGet
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(cctx, method, c.URL, strings.NewReader(c.Body))
	if err != nil {
		return fmt.Errorf("building the request: %w", err)
	}
	for k, v := range c.Headers {
		if strings.EqualFold(k, "host") {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	defer client.CloseIdleConnections()
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, c.URL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("%s %s: reading the body: %w", method, c.URL, err)
	}
	want := c.Status
	if want == 0 {
		want = 200
	}
	var problems []string
	if resp.StatusCode != want {
		problems = append(problems, fmt.Sprintf("status %d, expected %d", resp.StatusCode, want))
	}
	if c.BodyContains != "" && !bytes.Contains(body, []byte(c.BodyContains)) {
		problems = append(problems, fmt.Sprintf("body does not contain %q", c.BodyContains))
	}
	if c.BodyMatches != "" {
		if re, err := regexp.Compile(c.BodyMatches); err == nil && !re.Match(body) {
			problems = append(problems, fmt.Sprintf("body does not match /%s/", c.BodyMatches))
		}
	}
	if c.BodySize != nil && int64(len(body)) != *c.BodySize {
		problems = append(problems, fmt.Sprintf("body is %d bytes, expected %d", len(body), *c.BodySize))
	}
	keys := make([]string, 0, len(c.HeaderValues))
	for k := range c.HeaderValues {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if got := resp.Header.Get(k); got != c.HeaderValues[k] {
			problems = append(problems, fmt.Sprintf("header %s is %q, expected %q", k, got, c.HeaderValues[k]))
		}
	}
	if len(problems) > 0 {
		snippet := string(body)
		if len(snippet) > 200 {
			snippet = snippet[:200] + "…"
		}
		return fmt.Errorf("%s %s: %s (body: %q)", method, c.URL, strings.Join(problems, "; "), snippet)
	}
	return nil
}

func (tr *trialRun) exec(ctx context.Context, name string, c *pipeline.ExecConfig) error {
	timeout := 10 * time.Minute
	if c.Timeout != "" {
		timeout, _ = plan.ParseDuration(c.Timeout)
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(cctx, c.Command[0], c.Command[1:]...)
	cmd.Dir = c.Dir
	if cmd.Dir == "" {
		cmd.Dir = tr.r.plan.Pipeline.Dir
	}
	cmd.Env = os.Environ()
	for k, v := range c.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	setProcessGroup(cmd)
	if err := os.MkdirAll(tr.logDir, dirPerm(tr.r.w.Dir())); err != nil {
		return err
	}
	logPath := filepath.Join(tr.logDir, "exec-"+name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer f.Close()
	var tail tailbuf.Buffer
	out := redact.Default.Writer(io.MultiWriter(f, &tail))
	cmd.Stdout = out
	cmd.Stderr = out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("running %q: %w; last output:\n%s", strings.Join(c.Command, " "), err, tail.Lines(10, "  "))
	}
	return nil
}

// LoadOptions converts a load or warm step's config into load options
// (steps.LoadOptions), adding the request script's requester, built by
// requesters (nil: request scripts are not available).
func LoadOptions(c *steps.LoadConfig, kind string, fsys fs.FS, requesters RequesterFactory) (load.Options, error) {
	o, err := steps.LoadOptions(kind, c, fsys)
	if err != nil {
		return o, err
	}
	if c.Script != "" {
		if requesters == nil {
			return o, errors.New("script: request scripts are not available in this build")
		}
		base := c.Target
		if base == "" && len(c.URLs) > 0 {
			base = c.URLs[0].URL
		}
		req, err := requesters(fsys, c.Script, base)
		if err != nil {
			return o, fmt.Errorf("script %s: %w", c.Script, err)
		}
		o.Requester = req
	}
	return o, nil
}

func (tr *trialRun) load(ctx context.Context, st *pipeline.Step, c *steps.LoadConfig, collects []*plan.StepNode) error {
	opts, err := LoadOptions(c, st.Kind, tr.r.plan.Pipeline.FS, tr.r.opts.Requesters)
	if err != nil {
		return err
	}
	opts.Progress = func(p load.Progress) { tr.r.rep.LoadProgress(tr.trial, st.Addr(), p) }

	// Start the collectors that run during this step.
	type running struct {
		name string
		s    *collect.Sampler
	}
	var samplers []running
	var hosts []*hostSampling // per sampler, its other machines
	stopHosts := func() {
		for _, h := range hosts {
			h.stop(context.WithoutCancel(ctx), func(string, ...any) {})
		}
	}
	machine := false // a sampler with machine accounting started
	for _, cn := range collects {
		cfg, d := tr.te.Step(cn.Step)
		if d.HasErrors() {
			return fmt.Errorf("collect %s: %w", cn.Step.Name, diag.Err(d))
		}
		cc := steps.CollectOf(cfg)
		ccfg := tr.collectConfig(cn.Step.Name, cc, !machine)
		machine = machine || ccfg.Machine
		// The other machines of the trial, sampled alike, started with
		// this one (each takes its quiet check at the same time), so no
		// sampler's window holds another's quiet check.
		hch := make(chan *hostSampling, 1)
		go func() { hch <- tr.startHostSamplers(ctx, ccfg, c.Agents) }()
		s, err := collect.Start(ctx, ccfg)
		hosts = append(hosts, <-hch)
		if err != nil {
			for _, r := range samplers {
				r.s.Stop()
			}
			stopHosts()
			return err
		}
		samplers = append(samplers, running{cn.Step.Name, s})
	}
	// Request scripts may watch responses and summarise the run.
	type responseHooker interface{ ResponseHook() func(int) }
	type doner interface {
		Err() error
		Done(*measure.Record) error
	}
	if h, ok := opts.Requester.(responseHooker); ok {
		opts.OnResponse = h.ResponseHook()
	}
	var res *measure.Record
	var capacity *measure.Capacity
	var agents []results.AgentRecord
	var lerr error
	switch {
	case c.Agents != nil && c.Search != nil:
		capacity, agents, lerr = tr.searchOnAgents(ctx, st, c, opts)
		if at := capacity.At(); at != nil {
			res = at.Result
		}
	case c.Agents != nil && steps.BehaviourOf(st.Kind).Warms() && c.Until == "steady":
		res, agents, lerr = tr.warmSteadyOnAgents(ctx, st, c, opts)
	case c.Agents != nil:
		res, agents, lerr = tr.runOnAgents(ctx, st, c.Agents, opts)
	case c.Search != nil:
		capacity, lerr = tr.search(ctx, st, c, opts, nil)
		if at := capacity.At(); at != nil {
			res = at.Result
		}
	case steps.BehaviourOf(st.Kind).Warms() && c.Until == "steady":
		res, lerr = tr.warmSteady(ctx, st, c, opts, nil)
	default:
		if f := tr.r.opts.OnLoadStart; f != nil {
			runID, trialID, step := tr.r.w.Manifest().RunID, tr.trial.ID, st.Name
			opts.OnStart = func(o *load.Observer) { f(runID, trialID, step, o) }
		}
		// LoadOptions checked opts (with the check made when the step
		// was decoded for this trial): the load does not check them again.
		res, lerr = load.RunValidated(ctx, opts)
	}
	if d, ok := opts.Requester.(doner); ok {
		if err := d.Err(); err != nil && lerr == nil {
			lerr = fmt.Errorf("script: %w", err)
		}
		if res != nil {
			if err := d.Done(res); err != nil && lerr == nil {
				lerr = fmt.Errorf("script done(): %w", err)
			}
		}
	}
	if lerr == nil && steps.BehaviourOf(st.Kind).Measures {
		lerr = tooManyErrors(st.Name, res, c.MaxErrorRatio)
	}
	var ex *collect.Explanation
	var exHosts []*collect.HostResult
	var exSampling *hostSampling
	for i, r := range samplers {
		ps, sys, nets := r.s.Stop()
		hres := hosts[i].stop(context.WithoutCancel(ctx), func(f string, a ...any) {
			tr.r.rep.Logf("trial %s: %s", tr.trial.ID, fmt.Sprintf(f, a...))
		})
		if ex == nil {
			ex = r.s.Explain()
			if ex != nil {
				exHosts, exSampling = hres, hosts[i]
			}
		}
		for _, h := range hres {
			ps = append(ps, h.Processes...)
			sys = append(sys, h.System...)
			nets = append(nets, h.Network...)
		}
		tr.mu.Lock()
		tr.rec.Processes = append(tr.rec.Processes, ps...)
		tr.rec.System = append(tr.rec.System, sys...)
		tr.rec.Network = append(tr.rec.Network, nets...)
		tr.mu.Unlock()
		if len(ps) > 0 {
			tr.r.rep.Logf("trial %s: %s CPU: %s", tr.trial.ID, r.name, collect.FormatSummary(collect.Summary(ps)))
		}
	}
	step := results.StepRecord{Name: st.Name, Kind: st.Kind, Status: results.StatusOK, Result: res, Capacity: capacity, Agents: agents}
	info := explainStep(&step, ex, res)
	if exSampling != nil {
		explainHosts(&step, ex, exHosts, exSampling, info)
	}
	judgeAgents(&step)
	tr.logExplanation(&step)
	if lerr != nil {
		step.Status = results.StatusFailed
		step.Error = lerr.Error()
	}
	if err := tr.serviceDied(); err != nil {
		step.Status = results.StatusFailed
		step.Error = err.Error()
	} else if ctx.Err() != nil {
		step.Status = results.StatusInterrupted
	}
	tr.mu.Lock()
	tr.rec.Steps = append(tr.rec.Steps, step)
	tr.mu.Unlock()
	if res != nil {
		tr.r.rep.LoadDone(tr.trial, st.Addr(), res)
	}
	return lerr
}

// search runs a load step's capacity search (its search block), reporting
// each probe. A search in which no rate met the SLO is a result too: the
// capacity is below the lowest rate probed (limit "none"), and the step
// has no figures of its own (no probe passed to lend them).
//
// runner, when set, runs each probe's load (on agents: searchOnAgents).
func (tr *trialRun) search(ctx context.Context, st *pipeline.Step, c *steps.LoadConfig, opts load.Options,
	runner func(context.Context, load.Options) (*measure.Record, float64, error)) (*measure.Capacity, error) {
	so, err := steps.SearchOptions(c.Search)
	if err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	so.Load, so.Runner = opts, runner
	so.OnProbe = func(p measure.Probe) {
		verdict := "pass"
		if !p.Pass {
			verdict = "fail: " + p.Reason
		}
		tr.r.rep.Logf("trial %s: %s probe at %.0f req/s: achieved %.0f, p99 %.2f ms, %s", tr.trial.ID, st.Addr(), p.Rate, p.Achieved, p.P99/1e3, verdict)
	}
	capacity, err := load.FindMax(ctx, so)
	if err != nil {
		return capacity, err
	}
	tr.r.rep.Logf("trial %s: %s %s", tr.trial.ID, st.Addr(), capacity.Verdict())
	return capacity, nil
}
