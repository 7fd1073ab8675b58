package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/benchflow/benchflow/engine/report"
	"github.com/benchflow/benchflow/engine/results"
	"github.com/benchflow/benchflow/engine/scratch"
)

func init() { rootCmd.AddCommand(newReportCmd()) }

// newReportCmd builds `benchflow report`.
func newReportCmd() *cobra.Command {
	var (
		format   string
		raw      bool
		baseline string
		htmlFile string
		pngDir   string
		top      int
		unsteady bool
		failOn   bool
		update   []string
		check    bool
	)
	cmd := &cobra.Command{
		Use:   "report DIR",
		Short: "Summarise a run: one row per matrix cell, repetitions aggregated",
		Long: `report prints one row per matrix cell of a run: req/s (the geometric
mean of the repetitions) with a 95% confidence interval computed on the
logarithms (log-t; with 2 repetitions the min-max range instead), the method
and n, p50/p99/p99.9 latency from the merged histograms, errors, outlier
flags (MAD rule; flagged repetitions are kept), and the CPU% of the top
processes when collected. --baseline ratios pair the repetitions by round.
docs/statistics.md explains every number.

When collect steps accounted for the whole machine, each cell also gets a
verdict (server-bound, infrastructure-bound, loader-bound, not CPU-bound,
noisy, undetermined) with its evidence, warnings above the table name what
distorts the comparison (a busy machine, fuse-overlayfs, docker-proxy, a gap
the accounting does not explain), and --html/--png add a "where the CPU
went" chart (cpu.png). docs/collect.md gives the rules.

When the pipeline states claims (claim blocks), every format shows each
claim's outcome: holds (the whole 95% interval is on the claimed side of the
bound), fails (the whole interval is on the other side) or inconclusive (it
straddles the bound: by how much, and about how many more repetitions would
decide it). With --fail-on-claims, report exits 3 when a claim fails (after
printing the report), for CI.

DIR is a run directory (results/<run-id>), a published bundle, or a results
folder, whose "latest" run is used.

--update FILE (no DIR) regenerates every section of the Markdown file FILE
between <!-- benchflow:report BUNDLE [--baseline axis=value] --> and
<!-- /benchflow --> with what report --format markdown prints for BUNDLE
(relative to FILE's folder), and between <!-- benchflow:verdict BUNDLE -->
and <!-- /benchflow --> with BUNDLE/reproduction.md; each bundle is checked
against its SHA256SUMS first. With --check, nothing is written and report
exits 1 naming each section that differs (for tests and CI).`,
		Example: `  benchflow report results/latest
  benchflow report results/latest --baseline deploy=host --format markdown
  benchflow report results/latest --html report.html --png charts/
  benchflow report results/latest --fail-on-claims   # exit 3 when a claim fails
  benchflow report --update examples/quickstart/README.md
  benchflow report --check --update examples/*/README.md`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(update) > 0 {
				return cobra.MaximumNArgs(0)(cmd, args)
			}
			return cobra.ExactArgs(1)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(update) > 0 {
				return updateMarkdown(cmd.OutOrStdout(), update, check)
			}
			if check {
				return fmt.Errorf("--check needs --update FILE")
			}
			if !validFormat(format) {
				return fmt.Errorf("unknown --format %q (want %s)", format, strings.Join(report.Formats, ", "))
			}
			run, err := results.ReadRunWith(args[0], results.ReadOptions{StreamTables: true})
			if err != nil {
				return err
			}
			s, err := report.Summarize(run, report.Options{Baseline: baseline, TopProcesses: top, ExcludeUnsteady: unsteady,
				NoSeries: htmlFile == "" && pngDir == ""}) // the charts alone use the series
			if err != nil {
				return err
			}
			if htmlFile != "" {
				var b bytes.Buffer
				if err := report.WriteHTML(&b, s); err != nil {
					return err
				}
				if err := scratch.Machine().WriteOutput(htmlFile, 0o644, func(f *os.File) error {
					_, err := f.Write(b.Bytes())
					return err
				}); err != nil {
					return fmt.Errorf("writing HTML report: %w", err)
				}
			}
			if pngDir != "" {
				if _, err := report.WritePNG(pngDir, s); err != nil {
					return err
				}
			}
			s.RawCSV = raw
			if err := s.Write(cmd.OutOrStdout(), format); err != nil {
				return err
			}
			failed, invalid := report.FailedClaims(s.Claims), report.InvalidClaims(s.Claims)
			if failOn && len(failed)+len(invalid) > 0 {
				var why []string
				if len(failed) > 0 {
					why = append(why, fmt.Sprintf("%d claim(s) fail: %s", len(failed), strings.Join(failed, ", ")))
				}
				if len(invalid) > 0 {
					why = append(why, fmt.Sprintf("%d claim(s) not judged, their tables hold invalid values: %s", len(invalid), strings.Join(invalid, ", ")))
				}
				return &exitError{code: 3, err: errors.New(strings.Join(why, "; "))}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&format, "format", "text", "output format: text, markdown, csv or json")
	cmd.Flags().StringVar(&baseline, "baseline", "", "add each cell's req/s ratio to the cell with axis=value (e.g. deploy=host)")
	cmd.Flags().StringVar(&htmlFile, "html", "", "also write a self-contained HTML report with charts to `FILE`")
	cmd.Flags().StringVar(&pngDir, "png", "", "also write the charts as PNG files into `DIR`")
	cmd.Flags().IntVar(&top, "top", 3, "processes listed per cell (by CPU%); 0 lists none")
	cmd.Flags().BoolVar(&unsteady, "exclude-unsteady", false, "leave repetitions whose load failed the steadiness check out of the intervals (as the pipeline's exclude_unsteady = true does)")
	cmd.Flags().BoolVar(&failOn, "fail-on-claims", false, "exit 3 when one of the pipeline's claims fails on this run")
	cmd.Flags().StringArrayVar(&update, "update", nil, "regenerate the benchflow sections of this Markdown `FILE` from their bundles (repeatable; no DIR)")
	cmd.Flags().BoolVar(&raw, "raw", false, "with --format csv: write cells as they are, for programs (default: a cell beginning with =, +, -, @, a tab or a carriage return that is not a number gets a ' in front, so that a spreadsheet shows it as text instead of running it as a formula)")
	cmd.Flags().BoolVar(&check, "check", false, "with --update: write nothing, exit 1 when a section differs")
	return cmd
}

func validFormat(f string) bool {
	for _, x := range report.Formats {
		if f == x {
			return true
		}
	}
	return f == "md"
}
