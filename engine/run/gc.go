package run

import (
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"sort"

	"github.com/benchflow/benchflow/engine/plan"
	"github.com/benchflow/benchflow/engine/results"
	"github.com/benchflow/benchflow/engine/scratch"
	"github.com/benchflow/benchflow/providers"
)

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
// (or the selected ones). Unreachable backends are skipped, with a note
// when verbose, selected or configured.
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
			for _, x := range c.Restored {
				fmt.Fprintf(w, "put back a trial's part a killed commit had moved aside: %s\n", x)
			}
			for _, x := range c.Interrupted {
				fmt.Fprintf(w, "marked run interrupted (its process was killed): %s\n", x)
			}
			for _, l := range c.Left {
				fmt.Fprintf(w, "warning: %s\n", l)
			}
			total += len(c.Removed) + len(c.Restored) + len(c.Interrupted)
			if err != nil {
				errs = append(errs, err)
			}
		}
		// Outside run folders: publish's staging folders, reproduce's
		// temporary folders, temporary latest links and files.
		sr, err := scratch.Machine().Clean()
		for _, x := range sr.Removed {
			fmt.Fprintf(w, "removed what a killed benchflow left: %s\n", x)
		}
		for _, l := range sr.Left {
			fmt.Fprintf(w, "warning: %s\n", l)
		}
		total += len(sr.Removed)
		if err != nil {
			errs = append(errs, err)
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
			// A backend this machine does not have (no k8s, no Nomad) is
			// named only when asked for: with -v, --only, or a pipeline
			// that configures it.
			if o.notesSkipped(n) {
				fmt.Fprintf(w, "skipped %s: %v\n", n, err)
			}
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

// notesSkipped reports whether gc names provider type n when its backend
// cannot be reached: with -v, when --provider selects it, or when the
// pipeline configures it. A machine without k8s or Nomad is not told so on
// every gc.
func (o GCOptions) notesSkipped(n string) bool {
	return o.Verbose || len(o.Configs[n]) > 0 || slices.Contains(o.Only, n)
}
