package run

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/benchflow/benchflow/engine/plan"
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
		pv, d := te.Provider(s)
		if d.HasErrors() {
			return diagErr(d)
		}
		typ, cfg, d := te.ProviderConfig(pv)
		if d.HasErrors() {
			return diagErr(d)
		}
		name := plan.ImplicitLocal
		if pv != nil {
			name = pv.Name
		}
		if filter != "" && filter != typ.Name && filter != name {
			continue
		}
		prov, err := typ.New(&providers.NewRequest{Name: name, Config: cfg})
		if err != nil {
			return fmt.Errorf("configuring provider %q: %w", name, err)
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
		fmt.Fprintf(w, "# service %q, provider %q (%s), trial %s %s\n", s.Name, name, typ.Name, t.ID, t.ParamString())
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

// GC removes leftovers of crashed runs for every registered provider type
// (or only the named ones). Unreachable backends are skipped with a note.
func GC(ctx context.Context, w io.Writer, runID string, only []string) error {
	names := providers.Names()
	if len(only) > 0 {
		names = only
	}
	sort.Strings(names)
	var errs []error
	total := 0
	if len(only) == 0 {
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
		removed, err := t.GC(ctx, runID)
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
	fmt.Fprintf(w, "%d leftover(s) removed\n", total)
	return errors.Join(errs...)
}
