package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/benchflow/benchflow/engine/report"
	"github.com/benchflow/benchflow/engine/results"
	"github.com/benchflow/benchflow/engine/units"
)

func init() { rootCmd.AddCommand(newCompareCmd()) }

// newCompareCmd builds `benchflow compare`.
func newCompareCmd() *cobra.Command {
	var (
		format    string
		raw       bool
		failAbove string
	)
	cmd := &cobra.Command{
		Use:   "compare DIR_A DIR_B",
		Short: "Compare two runs cell by cell (B relative to A)",
		Long: `compare pairs the matrix cells of two runs by their parameters and shows,
for each, the ratio B/A of req/s and of p99 latency (geometric means) with a
95% Welch confidence interval on the logarithms over repetitions, a verdict
(faster, slower or no significant difference) and whether the cell
reproduced (B inside A's interval, or no significant difference), then a
summary line. Cells with fewer than 3 repetitions on a side are judged on
their per-interval samples instead.

It warns when the runs come from different environments and lists the
recorded environment fields that differ, A → B (CPU, kernel, versions —
the services' stack among them —, sysctls). With
--fail-above, it exits with status 2 when some cell is significantly
slower (req/s) or has a significantly higher p99 by more than the
threshold: use it in CI.`,
		Example: `  benchflow compare results/20261130T044500Z-3f9c results/latest
  benchflow compare base/latest pr/latest --fail-above 5%`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !validFormat(format) {
				return fmt.Errorf("unknown --format %q (want %s)", format, strings.Join(report.Formats, ", "))
			}
			threshold, err := parsePercent(failAbove)
			if err != nil {
				return fmt.Errorf("invalid --fail-above: %w", err)
			}
			a, err := results.ReadRunWith(args[0], results.ReadOptions{StreamTables: true})
			if err != nil {
				return err
			}
			b, err := results.ReadRunWith(args[1], results.ReadOptions{StreamTables: true})
			if err != nil {
				return err
			}
			c, err := report.Compare(a, b, report.CompareOptions{FailAbove: threshold})
			if err != nil {
				return err
			}
			c.RawCSV = raw
			if err := c.Write(cmd.OutOrStdout(), format); err != nil {
				return err
			}
			if c.Failed() {
				return &exitError{code: 2, err: fmt.Errorf("%d cell(s) regressed by more than %s", len(c.Regressions), failAbove)}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&format, "format", "text", "output format: text, markdown, csv or json")
	cmd.Flags().BoolVar(&raw, "raw", false, "with --format csv: write cells as they are, for programs (default: a cell beginning with =, +, -, @, a tab or a carriage return that is not a number gets a ' in front, so that a spreadsheet shows it as text instead of running it as a formula)")
	cmd.Flags().StringVar(&failAbove, "fail-above", "", "exit 2 when a cell regresses by more than this `PERCENT` (e.g. 5%)")
	return cmd
}

// parsePercent reads "5%" or "5" as 0.05 (units.ParsePercentAny: 0 and
// above 100% allowed); "" is 0 (off).
func parsePercent(s string) (float64, error) {
	if s == "" {
		return 0, nil
	}
	return units.ParsePercentAny(s)
}
