package run

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/benchflow/benchflow/engine/diag"
	"github.com/benchflow/benchflow/engine/plan"
	"github.com/benchflow/benchflow/providers"
)

// Render prints what one trial gives the providers of its services, for
// every service whose provider type (or name) is filter, without
// contacting anything. Each service is evaluated as the run evaluates it
// (plan.TrialEval.PrepareService, with the provider's placement but no
// port allocated). A provider that can render what it would create
// (providers.Renderer: Kubernetes manifests, the nomad job) prints that,
// reading the files from a temporary folder removed before Render
// returns; for the others (local, docker) Render prints the service's
// spec — command, image, env, ports, health, the provider's settings —
// and the content of each file.
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
		if filter != "" && filter != sp.Type.Name && filter != sp.Name {
			continue
		}
		if sp.Err != nil {
			return fmt.Errorf("configuring provider %q: %w", sp.Name, sp.Err)
		}
		at := plan.Placement{Provider: sp.Provider}
		r, ok := sp.Provider.(providers.Renderer)
		if !ok {
			// Printed as a spec: an "auto" port is 0, as no port is
			// allocated (a renderer is given the container port).
			at.HostPort = func() (int, error) { return 0, nil }
		}
		ps, d := te.PrepareService(s, at)
		if d.HasErrors() {
			return diag.Err(d)
		}
		header := fmt.Sprintf("# service %q, provider %q (%s), trial %s %s\n", s.Name, sp.Name, sp.Type.Name, t.ID, t.ParamString())
		if !ok {
			if rendered > 0 {
				fmt.Fprintln(w)
			}
			fmt.Fprint(w, header)
			writeSpec(w, sp, ps)
			rendered++
			continue
		}
		out, err := renderWith(r, ps, t)
		if err != nil {
			return fmt.Errorf("rendering service %q: %w", s.Name, err)
		}
		// JSON has no comments: a JSON document (the nomad job, which
		// `nomad job run -json` reads) is printed as it is.
		if !bytes.HasPrefix(bytes.TrimSpace(out), []byte("{")) {
			fmt.Fprint(w, header)
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

// renderWith has a Renderer render a prepared service, its files written
// to a temporary folder (the provider reads them, as Provision would)
// that is removed before it returns.
func renderWith(r providers.Renderer, ps *plan.PreparedService, t *plan.Trial) ([]byte, error) {
	dir, err := os.MkdirTemp(tempRoot(), "benchflow-render-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	spec, err := WriteFiles(ps, dir)
	if err != nil {
		return nil, err
	}
	return r.Render(&providers.ProvisionRequest{RunID: "render", TrialID: t.ID, Service: *spec,
		Logf: func(string, ...any) {}})
}

// writeSpec prints a prepared service for people: what its provider is
// given, then each file.
func writeSpec(w io.Writer, sp *plan.ServiceProvider, ps *plan.PreparedService) {
	spec := ps.Spec
	line := func(key, format string, args ...any) {
		fmt.Fprintf(w, "%-9s %s\n", key, fmt.Sprintf(format, args...))
	}
	if len(spec.Command) > 0 {
		line("command", "%s", shellJoin(spec.Command))
	}
	if spec.Image != "" {
		line("image", "%s", spec.Image)
	}
	for _, kv := range sortedEnv(spec.Env) {
		line("env", "%s", kv)
	}
	if spec.Replicas > 0 {
		line("replicas", "%d", spec.Replicas)
	}
	for i, p := range spec.Ports {
		pc := ps.Ports[i]
		auto := pc.Host == "" || pc.Host == "auto"
		s := fmt.Sprintf("%s: host %d", p.Name, p.Host)
		if auto {
			s = p.Name + ": host auto (a free loopback port when provisioned)"
		}
		if p.Container > 0 {
			s += fmt.Sprintf(", container %d", p.Container)
		}
		if l := ps.Listen[p.Name]; auto && l == p.Host {
			s += fmt.Sprintf("; self.port.%s is that port (0 here)", p.Name)
		} else {
			s += fmt.Sprintf("; self.port.%s = %d", p.Name, l)
		}
		line("port", "%s", s)
	}
	if h := spec.Health; h.HTTPPath != "" || h.TCP {
		check := "tcp connect"
		if h.HTTPPath != "" {
			check = "http GET " + h.HTTPPath
			if h.Status != 0 {
				check += fmt.Sprintf(" answering %d", h.Status)
			}
		}
		if h.PortName != "" {
			check += " on port " + h.PortName
		}
		line("health", "%s, within %s, every %s", check, h.Timeout, h.Interval)
	}
	if settings := plan.Settings(sp.Config); len(settings) > 0 {
		var parts []string
		for _, k := range sortedKeys(settings) {
			v, _ := json.Marshal(settings[k])
			parts = append(parts, k+" = "+string(v))
		}
		line("provider", "%s", strings.Join(parts, ", "))
	}
	for i, f := range ps.Files {
		fc := ps.Config.Files[i]
		fmt.Fprintf(w, "\n# file %q (%s, mode %04o): %s/%s", f.Name, f.From, f.Mode, ps.SelfDir, f.Name)
		if f.Mount != "" {
			fmt.Fprintf(w, ", also at %s", f.Mount)
		}
		fmt.Fprintln(w)
		switch f.From {
		case "source":
			fmt.Fprintf(w, "# %d bytes copied from %s\n", len(f.Data), fc.Source)
		case "random_bytes":
			fmt.Fprintf(w, "# %s of seeded random bytes\n", fc.RandomBytes)
		default:
			w.Write(f.Data)
			if len(f.Data) > 0 && f.Data[len(f.Data)-1] != '\n' {
				fmt.Fprintln(w)
			}
		}
	}
}

// shellJoin quotes argv as a POSIX shell would need it.
func shellJoin(argv []string) string {
	out := make([]string, len(argv))
	for i, a := range argv {
		if a != "" && strings.IndexFunc(a, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=,@%+", r))
		}) < 0 {
			out[i] = a
			continue
		}
		out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(out, " ")
}

func sortedEnv(env map[string]string) []string {
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

func sortedKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
