package main

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"sort"

	"github.com/spf13/cobra"

	"github.com/benchflow/benchflow/engine/bundle"
	"github.com/benchflow/benchflow/engine/report"
	"github.com/benchflow/benchflow/engine/results"
	"github.com/benchflow/benchflow/engine/run"
)

func init() {
	var vf varFlags
	var out, exitOn, format string
	var quiet, verbose bool
	cmd := &cobra.Command{
		Use:   "reproduce DIR",
		Short: "Rerun a published bundle here and say which claims and cells reproduced",
		Long: `reproduce checks the bundle DIR against its SHA256SUMS (a file that differs,
is missing or is not listed is named and nothing runs), then runs the
bundle's pipeline on this machine with the bundle's variables — through
apply's own code path, into --out like apply — and prints one verdict:

  claims       each claim's outcome here (holds, fails, inconclusive) beside
               its outcome in the bundle
  cells        per matrix cell, whether it reproduced by compare's rule
               (here inside the bundle's 95% interval, or no significant
               difference), with the req/s ratio here/bundle and its interval
  environment  every recorded field that differs (CPU model, cores, memory,
               kernel, virtualization, mitigations, docker storage driver and
               userland proxy, cgroup version, server and tool versions),
               named again next to each claim and cell that moved

Every variable can be changed with --var (a shorter duration); the
bundle's repetitions and seed are kept unless --repetitions or --seed say
otherwise. The new run is a run folder like any other (benchflow publish
bundles it); the verdict is also written into it as reproduction.md and
reproduction.json.

Exit status: 1 when the bundle cannot be read or does not match its
checksums, the pipeline is invalid, or a trial failed; 130 when
interrupted; with --exit-on claims (the default) 3 when a claim fails here
(inconclusive is not a failure), as report --fail-on-claims; with --exit-on
cells 2 when a cell did not reproduce; with --exit-on none 0 otherwise.`,
		Example: `  benchflow reproduce examples/quickstart/bundle
  benchflow reproduce studies/nat --var duration=5s --out /tmp/results
  benchflow reproduce studies/nat --exit-on cells --format markdown`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if quiet && verbose {
				return &exitError{code: 1, err: errors.New("--quiet and --verbose cannot be used together")}
			}
			switch exitOn {
			case "claims", "cells", "none":
			default:
				return &exitError{code: 1, err: fmt.Errorf("unknown --exit-on %q (want claims, cells or none)", exitOn)}
			}
			switch format {
			case "text", "markdown", "md", "json":
			default:
				return &exitError{code: 1, err: fmt.Errorf("unknown --format %q (want text, markdown or json)", format)}
			}
			dir := args[0]
			n, err := bundle.Verify(dir)
			if err != nil {
				return &exitError{code: 1, err: err}
			}
			fmt.Fprintf(stderr, "bundle %s: %d files match %s\n", dir, n, bundle.SumsFile)
			published, err := results.ReadRun(dir)
			if err != nil {
				return &exitError{code: 1, err: fmt.Errorf("reading the bundle: %w", err)}
			}
			m := published.Manifest
			stage, done, err := bundle.TempDir("benchflow-reproduce-")
			if err != nil {
				return &exitError{code: 1, err: err}
			}
			defer done()
			file, err := bundle.Stage(published.Dir, m, filepath.Join(stage, "pipeline"))
			if err != nil {
				return &exitError{code: 1, err: err}
			}
			// The bundle's variables first, then this command's --var.
			vars, _ := bundle.Vars(m)
			in := vf
			in.vars = nil
			for _, k := range sortedNames(vars) {
				in.vars = append(in.vars, k+"="+vars[k])
			}
			in.vars = append(in.vars, vf.vars...)
			if !cmd.Flags().Changed("repetitions") && m.Adaptive == nil && m.Repetitions > 0 {
				in.reps = m.Repetitions
			}
			if !cmd.Flags().Changed("seed") && m.Order == "random" && m.Seed != 0 {
				in.seed = m.Seed
			}
			pl, _, err := buildPlan(stderr, file, &in, false)
			if err != nil {
				return err
			}
			sum, runErr := applyPlan(pl, run.Options{OutDir: out}, quiet, verbose)
			var ee *exitError
			if errors.As(runErr, &ee) && ee.code == 130 || sum == nil || sum.Dir == "" {
				return runErr
			}
			here, err := results.ReadRun(sum.Dir)
			if err != nil {
				return &exitError{code: 1, err: fmt.Errorf("reading the new run: %w", err)}
			}
			claimsA, err := claimsOf(published)
			if err != nil {
				return &exitError{code: 1, err: fmt.Errorf("reading the bundle's claims: %w", err)}
			}
			claimsB, err := claimsOf(here)
			if err != nil {
				return &exitError{code: 1, err: fmt.Errorf("judging the claims here: %w", err)}
			}
			v, err := bundle.Judge(dir, published, here, claimsA, claimsB)
			if err != nil {
				return &exitError{code: 1, err: err}
			}
			if err := v.Write(cmd.OutOrStdout(), format); err != nil {
				return err
			}
			if err := saveVerdict(sum.Dir, v); err != nil {
				fmt.Fprintf(stderr, "warning: %v\n", err)
			}
			switch {
			case runErr != nil:
				return runErr
			case exitOn == "claims" && v.ClaimsFailed() > 0:
				return &exitError{code: 3, err: fmt.Errorf("%d claim(s) fail here", v.ClaimsFailed())}
			case exitOn == "cells" && v.CellsNotReproduced() > 0:
				return &exitError{code: 2, err: fmt.Errorf("%d cell(s) did not reproduce", v.CellsNotReproduced())}
			}
			return nil
		},
	}
	vf.register(cmd)
	cmd.Flags().StringVarP(&out, "out", "o", "", "results directory of the new run (default: the pipeline's output dir, or \"results\")")
	cmd.Flags().StringVar(&exitOn, "exit-on", "claims", "what makes the exit status non-zero: claims (3 when a claim fails here), cells (2 when a cell did not reproduce) or none")
	cmd.Flags().StringVar(&format, "format", "text", "verdict format: text, markdown or json")
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "print only warnings, failures and the verdict")
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "print every step and provider action")
	rootCmd.AddCommand(cmd)
}

// saveVerdict writes the verdict into the new run folder as
// reproduction.md and reproduction.json (publish keeps them).
func saveVerdict(dir string, v *bundle.Verdict) error {
	for name, format := range map[string]string{"reproduction.md": "markdown", "reproduction.json": "json"} {
		var b bytes.Buffer
		if err := v.Write(&b, format); err != nil {
			return err
		}
		if err := bundle.WriteRunFile(dir, name, b.Bytes()); err != nil {
			return fmt.Errorf("writing %s: %w", name, err)
		}
	}
	return nil
}

// claimsOf returns a run's claim outcomes: as recorded in its
// claims.parquet, else evaluated from its trials.
func claimsOf(r *results.Run) ([]report.ClaimOutcome, error) {
	if outs, ok, err := report.RecordedClaims(r); err != nil || ok {
		return outs, err
	}
	return report.EvaluateClaims(r)
}

func sortedNames(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
