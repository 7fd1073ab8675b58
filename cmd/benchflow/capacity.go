package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/benchflow/benchflow/engine/load"
	"github.com/benchflow/benchflow/engine/measure"
	"github.com/benchflow/benchflow/engine/pipeline"
	"github.com/benchflow/benchflow/engine/units"
)

// findMaxFlags are the flags of `benchflow load --find-max`.
type findMaxFlags struct {
	on            bool
	slo           string
	start, max    float64
	probe, settle string
	precision     string
	maxProbes     int
}

func (f *findMaxFlags) register(fs *pflag.FlagSet) {
	fs.BoolVar(&f.on, "find-max", false, "search for the highest rate (open loop) that meets --slo, instead of one load")
	fs.StringVar(&f.slo, "slo", "p99<10ms,errors<0.1%", "with --find-max: the objective each probe must meet (`TERMS`: p50/p90/p99/p99.9<LATENCY with its unit (10ms, 250us), errors<PCT)")
	fs.Float64Var(&f.start, "start-rate", 100, "with --find-max: the first probe's `RATE` (req/s); rates double from it")
	fs.Float64Var(&f.max, "max-rate", 1e7, "with --find-max: never probe above `RATE` req/s")
	fs.StringVar(&f.probe, "probe", "5s", "with --find-max: how long each probe runs (`DUR`, its first second not judged)")
	fs.StringVar(&f.precision, "precision", "2%", "with --find-max: stop when the last pass and the first failure are this close (`PCT`)")
	fs.IntVar(&f.maxProbes, "max-probes", 30, "with --find-max: give up after `N` probes")
}

// options checks the flags and builds the search; opts is the validated
// load template.
func (f *findMaxFlags) options(cmd *cobra.Command, opts load.Options) (load.SearchOptions, error) {
	so := load.SearchOptions{Load: opts, Start: f.start, Max: f.max, MaxProbes: f.maxProbes}
	var err error
	if so.SLO, err = measure.ParseSLO(f.slo); err != nil {
		return so, fmt.Errorf("--slo: %w", err)
	}
	if so.Probe, err = pipeline.ParseDuration(f.probe); err != nil {
		return so, fmt.Errorf("--probe: %w", err)
	}
	// A percentage as the search block's precision reads it; below 100%
	// is load.SearchOptions.Validate's rule, checked below for both.
	if so.Precision, err = units.ParsePercent(f.precision); err != nil {
		return so, fmt.Errorf("--precision: %w", err)
	}
	for _, name := range []string{"rate", "requests"} {
		if cmd.Flags().Changed(name) {
			return so, fmt.Errorf("--find-max sets the rate and length of each probe itself: drop --%s", name)
		}
	}
	if cmd.Flags().Changed("duration") {
		return so, fmt.Errorf("--find-max: use --probe for each probe's length, not -d")
	}
	if so.Start <= 0 {
		return so, fmt.Errorf("--start-rate %g: want at least %g", so.Start, load.MinStartRate)
	}
	if so.Max <= 0 {
		return so, fmt.Errorf("--max-rate %g: want at least %g", so.Max, load.MinStartRate)
	}
	// The one rule for a search's settings, with the flags' names.
	flag := map[string]string{"slo": "--slo", "start_rate": "--start-rate", "max_rate": "--max-rate", "probe": "--probe",
		"precision": "--precision", "max_probes": "--max-probes"}
	if fes := load.FieldErrors(so.Validate()); len(fes) > 0 {
		fe := fes[0]
		name := flag[fe.Field]
		if name == "" {
			name = fe.Field
		}
		return so, fmt.Errorf("%s %s: %s", name, fe.Value, fe.Reason)
	}
	return so, nil
}

// runFindMax runs the search and prints every probe and the verdict.
func runFindMax(cmd *cobra.Command, f *findMaxFlags, opts load.Options, jsonOut bool) error {
	so, err := f.options(cmd, opts)
	if err != nil {
		return err
	}
	stderr, stdout := cmd.ErrOrStderr(), cmd.OutOrStdout()
	if !jsonOut {
		conns := fmt.Sprintf("%d connections", opts.Connections)
		if opts.Protocol == measure.ProtoH2 {
			conns += fmt.Sprintf(" × %d HTTP/2 stream", opts.Streams)
			if opts.Streams != 1 {
				conns += "s"
			}
		}
		fmt.Fprintf(stdout, "Searching the highest rate under %s: %s, %d threads, %s probes, from %.0f req/s\n",
			so.SLO, conns, opts.Threads, so.Probe, so.Start)
	}
	so.OnProbe = func(p measure.Probe) {
		if !jsonOut && isTerminal(stderr) {
			fmt.Fprintf(stderr, "  probe %8.0f req/s: %s\n", p.Rate, probeLine(p))
		}
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	c, err := load.FindMax(ctx, so)
	if err != nil {
		return err
	}
	if jsonOut {
		return writeCapacityJSON(stdout, c)
	}
	writeProbes(stdout, c)
	fmt.Fprintf(stdout, "Capacity: %s\n", c.Verdict())
	if c.Limit == "none" {
		return &exitError{code: 1, err: fmt.Errorf("no probed rate met %s", c.SLO)}
	}
	return nil
}

func probeLine(p measure.Probe) string {
	verdict := "pass"
	if !p.Pass {
		verdict = "FAIL " + p.Reason
	}
	return fmt.Sprintf("achieved %.0f, p50 %s, p99 %s, errors %d  %s", p.Achieved, us(p.P50), us(p.P99), p.Errors, verdict)
}

func us(v float64) time.Duration {
	return (time.Duration(v) * time.Microsecond).Round(10 * time.Microsecond)
}

func writeProbes(w io.Writer, c *measure.Capacity) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "rate\tachieved\tp50\tp99\tp99.9\terrors\tloader cpu\tverdict\t")
	probed := map[float64]bool{}
	for _, p := range c.Probes {
		v := "pass"
		if !p.Pass {
			v = "fail"
			if p.GeneratorLimited {
				v = "generator (" + p.Cause + ")"
			}
		}
		if probed[p.Rate] {
			// The search ran this rate again (its first probe's sends
			// were late): the row is the second look, not a new rate.
			v += ", re-probe"
		}
		probed[p.Rate] = true
		fmt.Fprintf(tw, "%.0f\t%.0f\t%s\t%s\t%s\t%d\t%.0f%%\t%s\t\n", p.Rate, p.Achieved, us(p.P50), us(p.P99), us(p.P999), p.Errors, p.LoaderCPU*100, v)
	}
	tw.Flush()
}

type probeJSON struct {
	Rate             float64 `json:"rate"`
	Achieved         float64 `json:"achieved_rps"`
	Requests         int64   `json:"requests"`
	Errors           int64   `json:"errors"`
	P50              float64 `json:"latency_p50_us"`
	P99              float64 `json:"latency_p99_us"`
	P999             float64 `json:"latency_p999_us"`
	UncorrectedP99   float64 `json:"uncorrected_p99_us"`
	MeanBehindUS     float64 `json:"mean_behind_us"`
	LoaderCPU        float64 `json:"loader_cpu"`
	Busy             float64 `json:"busy"`
	Connections      int     `json:"connections"`
	Streams          int     `json:"streams"`
	Pass             bool    `json:"pass"`
	GeneratorLimited bool    `json:"generator_limited"`
	Cause            string  `json:"cause,omitempty"`
	Reason           string  `json:"reason,omitempty"`
}

func writeCapacityJSON(w io.Writer, c *measure.Capacity) error {
	out := struct {
		SLO      string      `json:"slo"`
		Capacity float64     `json:"capacity_rps"`
		Upper    float64     `json:"first_failing_rps"`
		Limit    string      `json:"limit"`
		Cause    string      `json:"cause,omitempty"`
		Verdict  string      `json:"verdict"`
		Probes   []probeJSON `json:"probes"`
	}{SLO: c.SLO.String(), Capacity: c.Rate, Upper: c.Upper, Limit: c.Limit, Cause: c.Cause, Verdict: c.Verdict()}
	for _, p := range c.Probes {
		out.Probes = append(out.Probes, probeJSON{p.Rate, p.Achieved, p.Requests, p.Errors, p.P50, p.P99, p.P999, p.UncorrectedP99,
			float64(p.MeanBehind) / 1e3, p.LoaderCPU, p.Busy, p.Connections, max(p.Streams, 1), p.Pass, p.GeneratorLimited, p.Cause, p.Reason})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
