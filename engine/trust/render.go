package trust

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/benchflow/benchflow/engine/escape"
	"github.com/benchflow/benchflow/engine/sandbox"
)

// WriteJSON prints p as indented JSON.
func (p *Plan) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(p)
}

// WriteText prints p for a person to read, on one screen where it can be.
func (p *Plan) WriteText(w io.Writer) error {
	var b strings.Builder
	title := p.Pipeline
	if p.Bundle != "" {
		title = fmt.Sprintf("%s (pipeline %s)", p.Bundle, p.Pipeline)
	}
	fmt.Fprintf(&b, "Plan: bundle %s, %d trial(s). A bundle is code: this is what it will run here.\n", title, p.Trials)
	b.WriteString("\nchecks\n")
	for _, c := range p.Checks {
		mark := "ok  "
		if !c.OK {
			mark = "FAIL"
		}
		fmt.Fprintf(&b, "  %s %-14s %s\n", mark, c.Name, c.Detail)
	}
	b.WriteString("\nservices\n")
	if len(p.Services) == 0 {
		b.WriteString("  (none)\n")
	}
	for _, s := range p.Services {
		fmt.Fprintf(&b, "  %s on %s (%s)%s\n", s.Name, s.Provider, s.ProviderType, trials(s.TrialCount, p.Trials, s.Cells))
		if s.Image != "" && s.ProviderType != "local" {
			fmt.Fprintf(&b, "    image    %s\n", s.Image)
		}
		if len(s.Command) > 0 {
			fmt.Fprintf(&b, "    command  %s\n", argv(s.Command))
		}
		if len(s.VersionCommand) > 0 {
			fmt.Fprintf(&b, "    version  %s  (run once, to record its version)\n", argv(s.VersionCommand))
		}
		fmt.Fprintf(&b, "    dir      %s\n", s.Dir)
		if len(s.Ports) > 0 {
			fmt.Fprintf(&b, "    ports    %s\n", strings.Join(s.Ports, ", "))
		}
		if len(s.Env) > 0 {
			fmt.Fprintf(&b, "    env      %s (values not shown)\n", strings.Join(s.Env, ", "))
		}
		if len(s.Files) > 0 {
			fmt.Fprintf(&b, "    writes   %s\n", strings.Join(s.Files, "; "))
		}
		if len(s.ProviderSettings) > 0 {
			fmt.Fprintf(&b, "    provider %s\n", settings(s.ProviderSettings))
		}
	}
	b.WriteString("\nsteps that act\n")
	if len(p.Steps) == 0 {
		b.WriteString("  (none)\n")
	}
	for _, s := range p.Steps {
		fmt.Fprintf(&b, "  %s%s\n", s.Address, trials(s.TrialCount, p.Trials, s.Cells))
		switch {
		case len(s.Command) > 0:
			fmt.Fprintf(&b, "    runs     %s\n    in       %s\n", argv(s.Command), s.Dir)
			if len(s.Env) > 0 {
				fmt.Fprintf(&b, "    env      %s (values not shown)\n", strings.Join(s.Env, ", "))
			}
		case s.Kind == "tune":
			var ch []string
			for _, k := range sortedKeys(s.Sysctl) {
				ch = append(ch, "sysctl "+k+"="+s.Sysctl[k])
			}
			for _, k := range sortedKeys(s.Rlimits) {
				ch = append(ch, "rlimit "+k+"="+s.Rlimits[k])
			}
			if s.ServiceCPUs != "" {
				ch = append(ch, "services on CPUs "+s.ServiceCPUs)
			}
			if s.LoaderCPUs != "" {
				ch = append(ch, "loader on CPUs "+s.LoaderCPUs)
			}
			if s.Nice != nil {
				ch = append(ch, fmt.Sprintf("nice %d", *s.Nice))
			}
			fmt.Fprintf(&b, "    changes  %s (undone after each trial)\n", strings.Join(ch, ", "))
		}
		if len(s.Targets) > 0 {
			fmt.Fprintf(&b, "    reaches  %s\n", strings.Join(s.Targets, ", "))
		}
		if s.Agents != "" {
			fmt.Fprintf(&b, "    agents   %s\n", s.Agents)
		}
	}
	b.WriteString("\nnetwork targets\n")
	if len(p.Targets) == 0 {
		b.WriteString("  (none)\n")
	}
	for _, t := range p.Targets {
		what := map[string]string{"service": "a service of this run", "loopback": "a service's port on the run's own loopback", "host-loopback": "this machine's loopback OUTSIDE the sandbox: needs --allow host-network", "outside": "OUTSIDE the sandbox: needs --allow host-network"}[t.Reach]
		fmt.Fprintf(&b, "  %s  (%s)\n", t.URL, what)
	}
	if len(p.Hosts) > 0 {
		b.WriteString("\nremote hosts (logged in to; every command run there)\n")
		for _, h := range p.Hosts {
			fmt.Fprintf(&b, "  %s  (provider %s)\n", h.Host, h.Provider)
			for _, c := range h.Commands {
				fmt.Fprintf(&b, "    %s\n", c)
			}
		}
		if len(p.Reads) > 0 {
			fmt.Fprintf(&b, "  reads here: %s\n", strings.Join(p.Reads, ", "))
		}
	}
	b.WriteString("\nneeds beyond the sandbox\n")
	if len(p.Needs) == 0 {
		b.WriteString("  nothing\n")
	}
	for _, n := range p.Needs {
		fmt.Fprintf(&b, "  --allow %-12s %s: %s\n", n.Grant, GrantMeaning(n.Grant), strings.Join(n.Why, "; "))
	}
	b.WriteString("\nconfinement\n")
	for _, l := range p.Sandbox {
		fmt.Fprintf(&b, "  %s\n", l)
	}
	if len(p.Notes) > 0 {
		b.WriteString("\nnotes\n")
		for _, n := range p.Notes {
			fmt.Fprintf(&b, "  %s\n", n)
		}
	}
	if len(p.Refused) > 0 {
		b.WriteString("\nrefused in the sandbox (no grant allows it)\n")
		for _, r := range p.Refused {
			fmt.Fprintf(&b, "  %s\n", r)
		}
	}
	// Every value above may be the bundle's: no control character
	// reaches the terminal (quote already wrote arguments' line breaks
	// as \n).
	_, err := io.WriteString(w, escape.Terminal(b.String()))
	return err
}

// GrantMeaning says in a few words what a grant opens: what its
// declaration says (sandbox.GrantMeaning).
func GrantMeaning(g sandbox.Grant) string { return sandbox.GrantMeaning(g) }

// trials says how many trials, and which cells, an entry is for when not
// all (at most three cells named).
func trials(n, of int, cells []string) string {
	if n == of {
		return ""
	}
	c := ""
	if len(cells) > 0 && cells[0] != "" {
		shown := cells
		if len(shown) > 3 {
			shown = shown[:3]
		}
		c = ": " + strings.Join(shown, "; ")
		if len(cells) > 3 {
			c += fmt.Sprintf("; %d more", len(cells)-3)
		}
	}
	return fmt.Sprintf("  [%d of %d trials%s]", n, of, c)
}

// argv prints a command as a shell would read it.
func argv(a []string) string {
	q := make([]string, len(a))
	for i, s := range a {
		q[i] = quote(s)
	}
	return strings.Join(q, " ")
}

func quote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=,+@%${}") == "" {
		return s
	}
	if strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		// $'…' as bash reads it: a line break or an escape is shown,
		// never sent (a plan line cannot be erased or forged).
		var b strings.Builder
		b.WriteString("$'")
		for _, r := range s {
			switch {
			case r == '\n':
				b.WriteString(`\n`)
			case r == '\t':
				b.WriteString(`\t`)
			case r == '\'' || r == '\\':
				b.WriteString(`\` + string(r))
			case r < 0x20 || r == 0x7f:
				fmt.Fprintf(&b, `\x%02x`, r)
			default:
				b.WriteRune(r)
			}
		}
		b.WriteString("'")
		return b.String()
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func settings(m map[string]any) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%v", k, m[k]))
	}
	return strings.Join(parts, " ")
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
