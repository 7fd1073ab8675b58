package run

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"slices"
	"sort"

	"github.com/benchflow/benchflow/engine/diag"
	"github.com/benchflow/benchflow/engine/plan"
	"github.com/benchflow/benchflow/engine/results"
	"github.com/benchflow/benchflow/providers"
)

// Render prints what the providers of one trial would create, for every
// service whose provider type (or name) is filter, without contacting
// anything. Providers that cannot render are reported as an error.
func Render(w io.Writer, pl *plan.Plan, trialID, filter string) error {
	if len(pl.Trials) == 0 {
		return errors.New("the plan has no trials")
	}
	t := pl.Trials[0]
	if trialID != "" {
		t = nil
		for _, x := range pl.Trials {
			if x.ID == trialID {
				t = x
			}
		}
		if t == nil {
			return fmt.Errorf("no trial %q (trials are named like %s)", trialID, pl.Trials[0].ID)
		}
	}
	te := pl.NewTrialEval(t, true)
	rendered := 0
	for _, s := range pl.Pipeline.Services {
		sp, d := te.ServiceProvider(s)
		if d.HasErrors() {
			return diag.Err(d)
		}
		name, typ, prov := sp.Name, sp.Type, sp.Provider
		if filter != "" && filter != typ.Name && filter != name {
			continue
		}
		if sp.Err != nil {
			return fmt.Errorf("configuring provider %q: %w", name, sp.Err)
		}
		r, ok := prov.(providers.Renderer)
		if !ok {
			return fmt.Errorf("provider type %q cannot render what it would create", typ.Name)
		}
		dir, err := os.MkdirTemp(tempRoot(), "benchflow-render-")
		if err != nil {
			return err
		}
		spec, _, err := PrepareService(te, s, prov, dir, false)
		if err != nil {
			os.RemoveAll(dir)
			return err
		}
		out, err := r.Render(&providers.ProvisionRequest{RunID: "render", TrialID: t.ID, Service: *spec,
			Logf: func(string, ...any) {}})
		os.RemoveAll(dir)
		if err != nil {
			return fmt.Errorf("rendering service %q: %w", s.Name, err)
		}
		// JSON has no comments: a JSON document (the nomad job, which
		// `nomad job run -json` reads) is printed as it is.
		if !bytes.HasPrefix(bytes.TrimSpace(out), []byte("{")) {
			fmt.Fprintf(w, "# service %q, provider %q (%s), trial %s %s\n", s.Name, name, typ.Name, t.ID, t.ParamString())
		}
		if _, err := w.Write(out); err != nil {
			return err
		}
		rendered++
	}
	if rendered == 0 {
		return fmt.Errorf("no service of trial %s uses a provider %q", t.ID, filter)
	}
	return nil
}

// ProviderConfigs decodes every provider block of the pipeline for each
// cell (first repetitions only: repetitions do not change a block) and
// returns the distinct configs by provider type, for gc to reach the
// engines and clusters the pipeline uses. Blocks that fail to decode are
// skipped: gc then falls back to the type's defaults.
func ProviderConfigs(pl *plan.Plan) map[string][]any {
	out := map[string][]any{}
	if len(pl.Pipeline.Providers) == 0 {
		out[plan.ImplicitLocal] = nil
		return out
	}
	for _, t := range pl.Trials {
		if t.Repetition != 1 {
			continue
		}
		te := pl.NewTrialEval(t, true)
		for _, pv := range pl.Pipeline.Providers {
			typ, cfg, d := te.ProviderConfig(pv)
			if d.HasErrors() || typ == nil {
				continue
			}
			if _, ok := out[typ.Name]; !ok {
				out[typ.Name] = nil
			}
			if cfg == nil || slices.ContainsFunc(out[typ.Name], func(x any) bool { return reflect.DeepEqual(x, cfg) }) {
				continue
			}
			out[typ.Name] = append(out[typ.Name], cfg)
		}
	}
	return out
}

// GCOptions select what GC removes.
type GCOptions struct {
	// RunID limits gc to what one run left (whoever owns it).
	RunID string
	// Only limits gc to these provider types; empty means every registered
	// type (or, with Configs, the types the pipeline uses).
	Only []string
	// Configs are a pipeline's provider configs by type (ProviderConfigs).
	Configs map[string][]any
	// Verbose also prints each object kept because its run is alive.
	Verbose bool
	// ResultsDir is a results folder whose runs' staging folders and
	// temporary files, left by killed writers, are removed, and whose runs
	// a killed writer left "running" are marked "interrupted" ("" skips
	// it).
	ResultsDir string
}

// GC removes leftovers of crashed runs for every registered provider type
// (or the selected ones). Unreachable backends are skipped with a note.
func GC(ctx context.Context, w io.Writer, o GCOptions) error {
	names := providers.Names()
	if len(o.Configs) > 0 {
		names = names[:0:0]
		for n := range o.Configs {
			names = append(names, n)
		}
	}
	if len(o.Only) > 0 {
		names = o.Only
	}
	sort.Strings(names)
	var errs []error
	total, kept := 0, 0
	// What a killed run left on this machine itself (sysctls, service
	// folders, unfinished results) is the local provider's part.
	if len(o.Only) == 0 || slices.Contains(o.Only, "local") {
		restored, err := restoreJournals()
		for _, x := range restored {
			fmt.Fprintf(w, "restored %s\n", x)
		}
		total += len(restored)
		if err != nil {
			errs = append(errs, err)
		}
		if o.ResultsDir != "" {
			c, err := results.CleanLeftovers(o.ResultsDir)
			for _, x := range c.Removed {
				fmt.Fprintf(w, "removed unfinished results file: %s\n", x)
			}
			for _, x := range c.Interrupted {
				fmt.Fprintf(w, "marked run interrupted (its process was killed): %s\n", x)
			}
			total += len(c.Removed) + len(c.Interrupted)
			if err != nil {
				errs = append(errs, err)
			}
		}
		dirs, err := gcTempDirs()
		for _, d := range dirs {
			fmt.Fprintf(w, "removed service folder: %s\n", d)
		}
		total += len(dirs)
		if err != nil {
			errs = append(errs, err)
		}
	}
	for _, n := range names {
		t, ok := providers.Lookup(n)
		if !ok {
			errs = append(errs, fmt.Errorf("unknown provider type %q (available: %v)", n, providers.Names()))
			continue
		}
		if t.GC == nil {
			continue
		}
		req := &providers.GCRequest{RunID: o.RunID, Configs: o.Configs[n], Logf: func(format string, args ...any) {
			kept++
			if o.Verbose {
				fmt.Fprintf(w, "%s: %s\n", n, fmt.Sprintf(format, args...))
			}
		}}
		removed, err := t.GC(ctx, req)
		for _, r := range removed {
			fmt.Fprintf(w, "removed %s: %s\n", n, r)
		}
		total += len(removed)
		if errors.Is(err, providers.ErrUnavailable) {
			fmt.Fprintf(w, "skipped %s: %v\n", n, err)
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", n, err))
		}
	}
	fmt.Fprintf(w, "%d leftover(s) removed", total)
	if kept > 0 {
		fmt.Fprintf(w, ", %d object(s) of live runs kept", kept)
		if !o.Verbose {
			fmt.Fprint(w, " (-v lists them)")
		}
	}
	fmt.Fprintln(w)
	return errors.Join(errs...)
}
