package main

import (
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/benchflow/benchflow/engine/bundle"
	"github.com/benchflow/benchflow/engine/report"
)

func init() { rootCmd.AddCommand(newPublishCmd()) }

// newPublishCmd builds `benchflow publish`.
func newPublishCmd() *cobra.Command {
	var opts bundle.Options
	var baseline string
	cmd := &cobra.Command{
		Use:   "publish RUN DIR",
		Short: "Write a run as a self-contained study bundle that others can read and reproduce",
		Long: `publish copies the run folder RUN (results/<run-id>, or a results folder's
latest run) into DIR as a bundle that can be copied anywhere and read
without benchflow:

  manifest.json       what ran, where (the environment), every trial
  pipeline.hcl|.star  the exact pipeline source
  sources/            every file the pipeline read (templates, request
                      scripts, Starlark loads) at its path
  variables.json      the variables used
  *.parquet           the tables (trials, latency histograms, time series,
                      CPU samples, …)
  report.md           the report table in Markdown
  report.html         the report as one self-contained page with charts,
                      the environment and the commands to reproduce it
  REPRODUCE.md        the exact commands to check, rerun and read it
  SHA256SUMS          the sha256 of every other file (sha256sum -c SHA256SUMS)
  SHA256SUMS.sig      with --sign KEY: SHA256SUMS signed with the SSH key KEY,
                      as ssh-keygen -Y sign -n benchflow-bundle writes it

A bundle is a run folder: benchflow report DIR and benchflow compare read it
as one, and benchflow reproduce DIR reruns it here. DIR must not exist or be
empty, and must not be inside RUN (symlinks resolved); --force replaces a
bundle, only when DIR holds nothing but the files its SHA256SUMS lists and
no symlink (benchflow deletes only what it recorded creating, and never
through a symlink). The bundle is written beside DIR (.DIR.tmp-N, recorded
first: gc removes a killed publish's) and renamed into place. A folder of
the run that is itself a bundle is never copied into the new one. --archive also writes DIR.tar.gz. The tables of CPU and network
samples and the time series usually dominate the size: --drop leaves them
out (docs/publishing.md says what is lost).

--sign KEY signs the bundle with an SSH private key file (ed25519, ecdsa or
rsa, as ssh-keygen makes it; a key with a passphrase, or its .pub file, is
used through ssh-agent). A reader who has your public key checks it with
benchflow reproduce DIR --allowed-signers FILE or ssh-keygen -Y verify
(docs/publishing.md, "Signatures"). --force replaces the signature with
the bundle: a re-publish without --sign is unsigned.`,
		Example: `  benchflow publish results/latest studies/quickstart
  benchflow publish results/20261130T044500Z-3f9c out/nat --archive --drop processes,system
  benchflow publish results/latest studies/quickstart --sign ~/.ssh/id_ed25519
  benchflow report studies/quickstart`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Report = report.Options{Baseline: baseline}
			res, err := bundle.Publish(args[0], args[1], opts)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			files := append([]bundle.File(nil), res.Files...)
			sort.SliceStable(files, func(i, j int) bool { return files[i].Bytes > files[j].Bytes })
			var big []string
			for i, f := range files {
				if i == 3 {
					break
				}
				big = append(big, fmt.Sprintf("%s %s", f.Path, fmtBytes(f.Bytes)))
			}
			n := len(res.Files) + 1 // SHA256SUMS
			if res.Signature.Present {
				n++
			}
			fmt.Fprintf(w, "bundle %s: %d files, %s (largest: %s)\n", res.Dir, n, fmtBytes(res.Bytes()), strings.Join(big, ", "))
			if len(res.Dropped) > 0 {
				fmt.Fprintf(w, "left out: %s\n", strings.Join(res.Dropped, ", "))
			}
			if len(res.Unrecorded) > 0 {
				fmt.Fprintf(w, "left out (not files a run writes): %s\n", strings.Join(res.Unrecorded, ", "))
			}
			if len(res.Skipped) > 0 {
				fmt.Fprintf(w, "left out (bundles inside the run, never copied into another): %s\n", strings.Join(res.Skipped, ", "))
			}
			if res.Archive != "" {
				fmt.Fprintf(w, "archive %s\n", res.Archive)
			}
			if sig := res.Signature; sig.Present {
				fmt.Fprintf(w, "signed by %s %s (%s, namespace %s): readers need this public key from you to check it\n", sig.KeyType, sig.Fingerprint, bundle.SigFile, bundle.SigNamespace)
			}
			fmt.Fprintf(w, "check it with: (cd %s && sha256sum -c SHA256SUMS); rerun it with: benchflow reproduce %s\n", res.Dir, res.Dir)
			return nil
		},
	}
	cmd.Flags().BoolVar(&opts.Archive, "archive", false, "also write DIR.tar.gz holding the bundle")
	cmd.Flags().StringSliceVar(&opts.Drop, "drop", nil, "leave these tables out: "+strings.Join(bundle.Droppable, ", ")+" (repeatable or comma-separated)")
	cmd.Flags().BoolVar(&opts.Logs, "logs", false, "keep the run's logs/ folder (service output per trial)")
	cmd.Flags().BoolVar(&opts.Force, "force", false, "replace DIR when it is a bundle already")
	cmd.Flags().StringVar(&opts.Sign, "sign", "", "sign SHA256SUMS with the SSH private key file `KEY` into "+bundle.SigFile+" (OpenSSH's format, namespace "+bundle.SigNamespace+")")
	cmd.Flags().StringVar(&baseline, "baseline", "", "report.md and report.html show each cell's req/s ratio to the cell with axis=value")
	return cmd
}

// fmtBytes prints a size in B, KiB or MiB.
func fmtBytes(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
