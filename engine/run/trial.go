package run

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/benchflow/benchflow/engine/diag"
	"github.com/benchflow/benchflow/engine/envinfo"
	"github.com/benchflow/benchflow/engine/pipeline"
	"github.com/benchflow/benchflow/engine/plan"
	"github.com/benchflow/benchflow/engine/redact"
	"github.com/benchflow/benchflow/engine/results"
	"github.com/benchflow/benchflow/engine/scratch"
	"github.com/benchflow/benchflow/engine/steps"
	"github.com/benchflow/benchflow/providers"
)

// teardownTimeout bounds each undo action (a fresh context, also after
// Ctrl-C).
const teardownTimeout = 60 * time.Second

// liveService is one provisioned service with what it takes to undo it.
type liveService struct {
	name        string
	fingerprint string
	dep         providers.Deployment
	dir         string // host folder with rendered files (removed at teardown)
	provider    string
	typ         string
	once        sync.Once
	err         error

	mu     sync.Mutex
	cancel context.CancelFunc // ends the context of a teardown in progress
}

// teardown stops the service once. A later call with an expired context
// (a forced exit) cuts short a graceful teardown still in progress:
// providers then kill at once instead of waiting for a polite stop.
func (l *liveService) teardown(ctx context.Context) error {
	if ctx.Err() != nil {
		l.mu.Lock()
		if l.cancel != nil {
			l.cancel()
		}
		l.mu.Unlock()
	}
	l.once.Do(func() {
		tctx, cancel := context.WithCancel(ctx)
		defer cancel()
		l.mu.Lock()
		l.cancel = cancel
		l.mu.Unlock()
		if l.dep != nil {
			l.err = l.dep.Teardown(tctx)
		}
		if l.dir != "" {
			if err := os.RemoveAll(l.dir); err != nil && l.err == nil {
				l.err = err
			}
		}
	})
	return l.err
}

// trialRun is the state of one trial.
type trialRun struct {
	r        *Runner
	te       *plan.TrialEval
	trial    *plan.Trial
	rec      *results.TrialRecord
	logDir   string
	mu       sync.Mutex
	services map[string]*liveService
	undo     []undoItem // one LIFO stack: services and tune changes alike
	svcOrder []string
	died     error // a service stopped while steps ran
	// agents are the running agent groups whose processes are on this
	// machine (agents.go): collect steps count them as the loader.
	agents []providers.ProcessReporter
}

// undoItem is one entry of the trial's undo stack: a change to revert
// (fn), or a provisioned service (svc), torn down or kept for the next
// trial.
type undoItem struct {
	what string
	fn   func(ctx context.Context) error
	svc  *liveService
}

func (tr *trialRun) pushUndo(what string, fn func(ctx context.Context) error) {
	tr.mu.Lock()
	tr.undo = append(tr.undo, undoItem{what: what, fn: fn})
	tr.mu.Unlock()
}

// runTrial runs one trial and tears it down; the caller records it and
// then reports it done (a trial is "ok" only once it is recorded).
func (r *Runner) runTrial(ctx context.Context, t *plan.Trial, next *plan.Trial) (*results.TrialRecord, time.Duration) {
	rec := &results.TrialRecord{
		TrialID: t.ID, Index: t.Index, Repetition: t.Repetition,
		Provider: trialProvider(t), StartedAt: time.Now().UTC(), Status: results.StatusOK,
		ServiceVersions: map[string]string{},
	}
	for _, p := range t.Params {
		rec.Params = append(rec.Params, results.Param{Name: p.Name, Value: plan.GoValue(p.Value)})
	}
	tr := &trialRun{
		r: r, te: r.plan.NewTrialEval(t, false), trial: t, rec: rec,
		logDir:   filepath.Join(r.w.Dir(), "logs", t.ID),
		services: map[string]*liveService{},
	}
	r.rep.TrialStart(t, len(r.plan.Trials))
	start := time.Now()

	err := tr.executeSafe(ctx)
	if err != nil {
		rec.Error = err.Error()
		rec.Status = results.StatusFailed
		if ctx.Err() != nil {
			rec.Status = results.StatusInterrupted
		}
	}
	// Teardown: everything the trial did, services included, in reverse,
	// each with a fresh context — also after Ctrl-C.
	tr.teardown(next)
	rec.FinishedAt = time.Now().UTC()
	return rec, time.Since(start)
}

// executeSafe is execute, turning a panic (a bug) into the trial's error
// so that the trial is still torn down and recorded.
func (tr *trialRun) executeSafe(ctx context.Context) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("internal error (please report it): %v", p)
		}
	}()
	return tr.execute(ctx)
}

// pushService puts a provisioned (or kept) service on the undo stack, so
// that it is torn down in reverse order with everything else the trial did
// (a tune step before it is undone after it stops).
func (tr *trialRun) pushService(l *liveService) {
	tr.mu.Lock()
	tr.undo = append(tr.undo, undoItem{what: "service " + l.name, svc: l})
	tr.mu.Unlock()
}

func (tr *trialRun) teardown(next *plan.Trial) {
	tr.mu.Lock()
	undo := tr.undo
	tr.undo = nil
	tr.mu.Unlock()
	for i := len(undo) - 1; i >= 0; i-- {
		u := undo[i]
		if l := u.svc; l != nil {
			if next != nil && tr.rec.Status == results.StatusOK && reusedIn(next, l.name, l.fingerprint) {
				tr.r.mu.Lock()
				tr.r.kept[l.name] = l
				tr.r.mu.Unlock()
				tr.r.rep.Logf("trial %s: keeping service %s running for trial %s", tr.trial.ID, l.name, next.ID)
				continue
			}
			tr.r.teardownService(l)
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), teardownTimeout)
		if err := u.fn(ctx); err != nil {
			tr.r.rep.Warnf("trial %s: undoing %s: %v", tr.trial.ID, u.what, err)
		}
		cancel()
	}
}

func reusedIn(t *plan.Trial, name, fp string) bool {
	for _, s := range t.Services {
		if s.Name == name {
			return s.Reuse && s.Fingerprint == fp
		}
	}
	return false
}

func (r *Runner) teardownService(l *liveService) {
	ctx, cancel := context.WithTimeout(context.Background(), teardownTimeout)
	defer cancel()
	if err := l.teardown(ctx); err != nil {
		r.rep.Warnf("tearing down service %s: %v", l.name, err)
	}
	r.mu.Lock()
	delete(r.active, l)
	r.mu.Unlock()
}

func (r *Runner) releaseKept() {
	r.mu.Lock()
	kept := r.kept
	r.kept = map[string]*liveService{}
	r.mu.Unlock()
	for _, l := range kept {
		r.teardownService(l)
	}
}

func (tr *trialRun) execute(ctx context.Context) error {
	p := tr.r.plan.Pipeline
	if _, d := tr.te.Locals(); d.HasErrors() {
		return diag.Err(d)
	}
	explicit := map[string]bool{}
	for _, st := range p.Steps {
		k := steps.Lookup(st.Kind)
		if k == nil || k.Deploys == nil {
			continue
		}
		cfg, d := tr.te.Step(st)
		if d.HasErrors() {
			return diag.Err(d)
		}
		for _, s := range k.Deploys(cfg) {
			explicit[s] = true
		}
	}
	for _, s := range p.Services {
		if explicit[s.Name] {
			continue
		}
		if err := tr.provision(ctx, s); err != nil {
			return err
		}
	}
	return tr.runDAG(ctx)
}

func (tr *trialRun) provision(ctx context.Context, s *pipeline.Service) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	// A service kept from the previous trial.
	tr.r.mu.Lock()
	kept := tr.r.kept[s.Name]
	delete(tr.r.kept, s.Name)
	tr.r.mu.Unlock()
	if kept != nil {
		if reusedIn(tr.trial, s.Name, kept.fingerprint) {
			tr.services[s.Name] = kept
			tr.svcOrder = append(tr.svcOrder, s.Name)
			tr.pushService(kept)
			tr.te.SetEndpoint(s.Name, kept.dep.Endpoint())
			redact.Default.Add(tr.te.DerivedSensitive()...)
			tr.recordService(kept, true)
			tr.r.rep.Logf("trial %s: service %s kept from the previous trial", tr.trial.ID, s.Name)
			return nil
		}
		tr.r.teardownService(kept)
	}

	sp, d := tr.te.ServiceProvider(s)
	if d.HasErrors() {
		return diag.Err(d)
	}
	name, typ, prov := sp.Name, sp.Type, sp.Provider
	if sp.Err != nil {
		return fmt.Errorf("configuring provider %q for service %q: %w", name, s.Name, sp.Err)
	}
	hostDir, err := os.MkdirTemp(tempRoot(), serviceDirPrefix(tr.r.w.Manifest().RunID, tr.trial.ID, s.Name))
	if err != nil {
		return fmt.Errorf("creating the folder of service %q: %w", s.Name, err)
	}
	live := &liveService{name: s.Name, dir: hostDir, fingerprint: fingerprintOf(tr.trial, s.Name), provider: name, typ: typ.Name}
	tr.services[s.Name] = live
	tr.svcOrder = append(tr.svcOrder, s.Name)
	tr.pushService(live)
	ps, d := tr.te.PrepareService(s, plan.Placement{Provider: prov, Dir: hostDir, HostPort: freePort})
	if d.HasErrors() {
		return diag.Err(d)
	}
	spec, err := WriteFiles(ps, hostDir)
	if err != nil {
		return err
	}
	if vc := ps.Config.VersionCommand; len(vc) > 0 {
		vctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		var v string
		if vr, ok := prov.(providers.VersionRunner); ok {
			v, err = vr.RunVersion(vctx, vc) // on the service's machine
		} else {
			v, err = envinfo.ServiceVersion(vctx, vc)
		}
		cancel()
		if err != nil {
			tr.r.rep.Warnf("service %s: version_command: %v", s.Name, err)
		} else {
			tr.rec.ServiceVersions[s.Name] = v
		}
	}
	if err := os.MkdirAll(tr.logDir, dirPerm(tr.r.w.Dir())); err != nil {
		return fmt.Errorf("creating the log folder: %w", err)
	}
	if err := tr.keepFiles(ps); err != nil {
		return err
	}
	tr.r.rep.Logf("trial %s: provisioning %s with %s", tr.trial.ID, s.Name, name)
	dep, err := prov.Provision(ctx, &providers.ProvisionRequest{
		RunID: tr.r.w.Manifest().RunID, TrialID: tr.trial.ID, Service: *spec, LogDir: tr.logDir,
		Logf: tr.r.rep.Logf,
	})
	if err != nil {
		return fmt.Errorf("provisioning %q with %s: %w", s.Name, name, err)
	}
	live.dep = dep
	tr.r.mu.Lock()
	tr.r.active[live] = true
	tr.r.mu.Unlock()
	if err := waitHealthy(ctx, dep, spec.Health); err != nil {
		return fmt.Errorf("service %q never became healthy: %w", s.Name, err)
	}
	tr.te.SetEndpoint(s.Name, dep.Endpoint())
	redact.Default.Add(tr.te.DerivedSensitive()...)
	tr.recordService(live, false)
	return nil
}

// recordService notes where a service runs in this trial's record.
func (tr *trialRun) recordService(l *liveService, reused bool) {
	ep := l.dep.Endpoint()
	versions := platformVersions(l.dep)
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.rec.Services = append(tr.rec.Services, results.ServiceEntry{
		Name: l.name, Provider: l.provider, Type: l.typ, URL: ep.URL(), Attrs: ep.Attrs, Reused: reused,
		Versions: versions,
	})
}

// WriteFiles writes a prepared service's files into dir (a folder the
// caller made, 0700 as MkdirTemp makes it) and returns the spec its
// provider receives. The folder stays its owner's only when a file is
// private; otherwise it is opened to all (containers may run as another
// user).
func WriteFiles(ps *plan.PreparedService, dir string) (*providers.ServiceSpec, error) {
	spec := ps.Spec
	spec.Dir = dir
	spec.Files = nil
	for _, f := range ps.Files {
		hp := filepath.Join(dir, f.Name)
		if err := os.WriteFile(hp, f.Data, os.FileMode(f.Mode)); err != nil {
			return nil, fmt.Errorf("writing file %q of service %q: %w", f.Name, spec.Name, err)
		}
		spec.Files = append(spec.Files, providers.File{Name: f.Name, HostPath: hp, Mount: f.Mount, Mode: f.Mode})
	}
	if !ps.Private {
		_ = os.Chmod(dir, 0o755)
	}
	return &spec, nil
}

// keepFiles copies the service's files that the pipeline rendered
// (template and content) into the trial's log folder, where they stay
// after teardown: logs/<trial>/files/<service>/<name>. They are redacted
// as every log is (a sensitive value, and the user-info of a URL, read
// "(sensitive)") and keep their mode (0600 when private). Files copied
// from source (the run keeps its sources/) and random_bytes (seeded: the
// same in every run) are not copied.
func (tr *trialRun) keepFiles(ps *plan.PreparedService) error {
	dir := filepath.Join(tr.logDir, "files", ps.Spec.Name)
	made := false
	for _, f := range ps.Files {
		if f.From != "template" && f.From != "content" {
			continue
		}
		if !made {
			if err := os.MkdirAll(dir, dirPerm(tr.logDir)); err != nil {
				return fmt.Errorf("keeping the files of service %q: %w", ps.Spec.Name, err)
			}
			made = true
		}
		data := redact.Default.String(string(f.Data))
		if err := writeFileAtomic(scratch.Run(tr.r.w.Dir()), filepath.Join(dir, f.Name), []byte(data), os.FileMode(f.Mode)); err != nil {
			return fmt.Errorf("keeping file %q of service %q: %w", f.Name, ps.Spec.Name, err)
		}
	}
	return nil
}

func fingerprintOf(t *plan.Trial, name string) string {
	for _, s := range t.Services {
		if s.Name == name {
			return s.Fingerprint
		}
	}
	return ""
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// writeFileAtomic writes data to path (with mode, less the umask) through
// a temporary file recorded in j and renamed into place, as every file of
// a results folder is written: a crash never leaves a truncated file.
func writeFileAtomic(j *scratch.Journal, path string, data []byte, mode os.FileMode) error {
	return j.WriteFile(path, mode, func(f *os.File) error {
		_, err := f.Write(data)
		return err
	})
}
