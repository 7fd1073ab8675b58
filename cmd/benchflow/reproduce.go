package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/benchflow/benchflow/engine/bundle"
	"github.com/benchflow/benchflow/engine/escape"
	"github.com/benchflow/benchflow/engine/plan"
	"github.com/benchflow/benchflow/engine/redact"
	"github.com/benchflow/benchflow/engine/report"
	"github.com/benchflow/benchflow/engine/results"
	"github.com/benchflow/benchflow/engine/run"
	"github.com/benchflow/benchflow/engine/sandbox"
	"github.com/benchflow/benchflow/engine/sandbox/grant"
	"github.com/benchflow/benchflow/engine/trust"
)

// afterSnapshot, when set (tests), runs once the bundle is copied into
// its private folder, before the copy is checked.
var afterSnapshot func(dir string)

// consentPrompt is what reproduce asks on a terminal (as Terraform asks
// before apply).
const consentPrompt = "Do you want to run this bundle here? Only 'yes' will be accepted: "

func init() { rootCmd.AddCommand(newReproduceCmd()) }

// reproduceFlags are reproduce's flags.
type reproduceFlags struct {
	vf                                               varFlags
	out, exitOn, format, allowedSigners              string
	allow                                            []string
	quiet, verbose, yes, planOnly, asJSON, noSandbox bool
}

const reproduceLong = `A bundle is code: its services, exec steps and tune steps run commands on
this machine. reproduce therefore checks the bundle, prints a plan of
everything it will do, asks before running anything, and runs it confined.

1. Checks (any failure refuses, nothing runs) — of a private copy of the
   bundle, which is what runs: every file against SHA256SUMS (a file that differs, is missing, is not listed or is not a
   regular file — a FIFO, a symlink, a folder — is named); the pipeline's
   sha256 against the one manifest.json records; the signature
   SHA256SUMS.sig when there is one (--allowed-signers FILE says who may
   have signed it, as ssh-keygen -Y verify; an unsigned bundle says so).

2. The plan, built from the compiled pipeline with the bundle's variables:
   every service (provider, command or image, working folder, ports, the
   names of its environment variables, the files it writes), every exec
   step's command, every tune change, the agents, every network target,
   what the run needs beyond the sandbox (the grants below), and the
   sandbox's rules. --plan prints it and stops (--json, or --format json,
   prints it as JSON: docs/cli.md#reproduce).

3. Consent: on a terminal it asks, and only "yes" goes on; without a
   terminal it needs --yes, else it exits 1 having run nothing.

4. The run, confined by bubblewrap (bwrap): benchflow apply of the staged
   pipeline in a sandbox where the file system is read-only but --out and
   a private /tmp, home folders are hidden, and the network is a loopback
   of its own. Whatever leaves the sandbox is a grant named in the plan and
   given one by one with --allow: docker (the Docker socket and the host
   network), k8s (the kubeconfig and the host network), nomad (the Nomad,
   Consul and APISIX addresses and the host network), tune (net.*,
   fs.file-max, fs.nr_open, fs.aio-max-nr, vm.max_map_count,
   vm.swappiness and the CPU governor; a bundle setting any other sysctl
   is refused), ssh (logging in to the hosts of its ssh providers, with
   your ssh-agent and the keys and known_hosts they name: the plan lists
   every host and every command run there), host-network. A bundle that needs a grant not given
   refuses before anything runs. The run has its own processes (and, as
   root, its own user namespace), no terminal (its output is shown with
   control characters escaped), only an allow-list of environment
   variables (never BENCHFLOW_AGENT_TOKEN), and every process it started
   is killed when it ends. --no-sandbox runs unconfined
   (after the plan and consent still). Ctrl-C stops the run and waits for
   its teardown.

5. The verdict, as before:

  claims       each claim's outcome here (holds, fails, inconclusive) beside
               its outcome in the bundle
  cells        per matrix cell, whether it reproduced by compare's rule
               (here inside the bundle's 95% interval, or no significant
               difference), with the req/s ratio here/bundle and its interval
  environment  every recorded field that differs (CPU model, cores, memory,
               kernel, virtualization, mitigations, docker storage driver and
               userland proxy, cgroup version, server and tool versions),
               named again next to each claim and cell that moved

The results go only under --out (default: reproduce-<pipeline name> in the
current folder); a bundle's output { dir } is ignored. Every variable can
be changed with --var (a shorter duration); the bundle's repetitions and
seed are kept unless --repetitions or --seed say otherwise. The new run is
a run folder like any other (benchflow publish bundles it); the verdict is
also written into it as reproduction.md and reproduction.json.

Exit status: 1 when the bundle cannot be read or fails a check, the
pipeline is invalid, consent was not given, a grant is missing, or a trial
failed; 130 when interrupted; with --exit-on claims (the default) 3 when a
claim fails here (inconclusive is not a failure), as report
--fail-on-claims; with --exit-on cells 2 when a cell did not reproduce;
with --exit-on none 0 otherwise.`

// newReproduceCmd builds `benchflow reproduce`.
func newReproduceCmd() *cobra.Command {
	f := &reproduceFlags{}
	cmd := &cobra.Command{
		Use:   "reproduce DIR",
		Short: "Show what a published bundle will run, ask, then rerun it in a sandbox and say which claims and cells reproduced",
		Long:  reproduceLong,
		Example: `  benchflow reproduce examples/quickstart/bundle --plan      # what it would do; runs nothing
  benchflow reproduce examples/quickstart/bundle               # the plan, then asks
  benchflow reproduce examples/quickstart/bundle --yes --var duration=1s
  benchflow reproduce studies/nat --allow docker --yes --out /tmp/results
  benchflow reproduce studies/nat --allowed-signers ~/.ssh/allowed_signers --plan --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runReproduce(cmd, f, args[0]) },
	}
	f.vf.register(cmd)
	fl := cmd.Flags()
	fl.StringVarP(&f.out, "out", "o", "", "results directory of the new run (default: reproduce-<pipeline name> in the current folder; the bundle's output dir is ignored)")
	fl.StringVar(&f.exitOn, "exit-on", "claims", "what makes the exit status non-zero: claims (3 when a claim fails here), cells (2 when a cell did not reproduce) or none")
	fl.StringVar(&f.format, "format", "text", "verdict format: text, markdown or json (with --plan, json prints the plan as JSON)")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "print only the verdict, and the run's warnings and failures (the plan only when asking for consent, without --yes)")
	fl.BoolVarP(&f.verbose, "verbose", "v", false, "print every step and provider action")
	fl.BoolVarP(&f.yes, "yes", "y", false, "run without asking (needed without a terminal): consent to the plan printed")
	fl.BoolVar(&f.planOnly, "plan", false, "print the plan and stop: run nothing")
	fl.BoolVar(&f.asJSON, "json", false, "with --plan: print the plan as JSON")
	fl.StringArrayVar(&f.allow, "allow", nil, "grant the run something beyond the sandbox: "+sandbox.GrantNames()+" (repeatable, or a comma list)")
	fl.BoolVar(&f.noSandbox, "no-sandbox", false, "run unconfined, as you, with your files and network (after the plan and consent still)")
	fl.StringVar(&f.allowedSigners, "allowed-signers", "", "an allowed-signers file (as ssh-keygen -Y verify reads it): the bundle must be signed by a key it lists")
	return cmd
}

// grants checks f's flags against each other and returns the grants
// --allow names.
func (f *reproduceFlags) grants() ([]sandbox.Grant, error) {
	if f.quiet && f.verbose {
		return nil, &exitError{code: 1, err: errors.New("--quiet and --verbose cannot be used together")}
	}
	switch f.exitOn {
	case "claims", "cells", "none":
	default:
		return nil, &exitError{code: 1, err: fmt.Errorf("unknown --exit-on %q (want claims, cells or none)", f.exitOn)}
	}
	switch f.format {
	case "text", "markdown", "md", "json":
	default:
		return nil, &exitError{code: 1, err: fmt.Errorf("unknown --format %q (want text, markdown or json)", f.format)}
	}
	if f.asJSON && !f.planOnly {
		return nil, &exitError{code: 1, err: errors.New("--json goes with --plan (the verdict's format is --format)")}
	}
	var grants []sandbox.Grant
	for _, a := range f.allow {
		for _, name := range strings.Split(a, ",") {
			g, err := sandbox.ParseGrant(strings.TrimSpace(name))
			if err != nil {
				return nil, &exitError{code: 1, err: fmt.Errorf("--allow: %w", err)}
			}
			grants = append(grants, g)
		}
	}
	if f.noSandbox && len(grants) > 0 {
		return nil, &exitError{code: 1, err: errors.New("--allow and --no-sandbox cannot be used together (unconfined, everything is allowed)")}
	}
	return grants, nil
}

// stagedBundle is a bundle copied into a private folder and checked
// there: what the plan is built from and what runs.
type stagedBundle struct {
	stage     string // the private folder
	published *results.Run
	checks    []trust.Check
}

// stageBundle checks the bundle dir as it is (each problem named), then
// copies it into a private folder, each file opened once and not
// followed, and checks it again there, with its signature: the copy is
// what the signature, the pipeline's sha256 and the plan are checked
// against, and what runs. done removes the folder.
func stageBundle(dir, allowedSigners string) (*stagedBundle, func(), error) {
	if _, err := bundle.Verify(dir); err != nil {
		return nil, nil, &exitError{code: 1, err: err}
	}
	stage, done, err := bundle.TempDir("benchflow-reproduce-")
	if err != nil {
		return nil, nil, &exitError{code: 1, err: err}
	}
	sb := &stagedBundle{stage: stage}
	fail := func(err error) (*stagedBundle, func(), error) {
		done()
		return nil, nil, err
	}
	copied := filepath.Join(stage, "bundle")
	if err := bundle.Snapshot(dir, copied, 0); err != nil {
		return fail(&exitError{code: 1, err: err})
	}
	if afterSnapshot != nil {
		afterSnapshot(dir)
	}
	n, err := bundle.Verify(copied)
	if err != nil {
		return fail(&exitError{code: 1, err: fmt.Errorf("bundle %s changed while it was being read: %w; refusing it", dir, err)})
	}
	sb.checks = append(sb.checks, trust.Check{Name: "checksums", OK: true, Detail: fmt.Sprintf("%d files match %s, no file unlisted (checked in a private copy, which is what runs)", n, bundle.SumsFile)})
	sig, err := bundle.CheckSignature(copied, allowedSigners)
	if err != nil {
		return fail(&exitError{code: 1, err: fmt.Errorf("%w: refusing the bundle", err)})
	}
	switch {
	case !sig.Present && allowedSigners != "":
		return fail(&exitError{code: 1, err: fmt.Errorf("bundle %s is not signed (no %s), and --allowed-signers %s asks for a signer: refusing it", dir, bundle.SigFile, allowedSigners)})
	case !sig.Present:
		sb.checks = append(sb.checks, trust.Check{Name: "signature", OK: true, Detail: "unsigned: nothing says who published it"})
	case sig.Checked:
		sb.checks = append(sb.checks, trust.Check{Name: "signature", OK: true, Detail: fmt.Sprintf("signed by %s, allowed by %s", sig.Signer(), allowedSigners)})
	default:
		sb.checks = append(sb.checks, trust.Check{Name: "signature", OK: true, Detail: fmt.Sprintf("signed by %s %s, a key it carries itself: --allowed-signers FILE checks whose it is", sig.KeyType, sig.Fingerprint)})
	}
	if sb.published, err = results.ReadRun(copied); err != nil {
		return fail(&exitError{code: 1, err: fmt.Errorf("reading the bundle: %w", err)})
	}
	return sb, done, nil
}

// reproducePlan builds the staged bundle's plan with its variables (then
// --var's), checks its pipeline against the manifest's sha256, and
// returns it with the staged pipeline's file and the flags it ran with.
func reproducePlan(cmd *cobra.Command, f *reproduceFlags, dir string, sb *stagedBundle) (*plan.Plan, string, varFlags, error) {
	m := sb.published.Manifest
	file, err := bundle.Stage(sb.published.Dir, m, filepath.Join(sb.stage, "pipeline"))
	if err != nil {
		return nil, "", varFlags{}, &exitError{code: 1, err: err}
	}
	// The bundle's variables first, then this command's --var.
	vars, _ := bundle.Vars(m)
	in := f.vf
	in.vars = nil
	for _, k := range sortedNames(vars) {
		in.vars = append(in.vars, k+"="+vars[k])
	}
	in.vars = append(in.vars, f.vf.vars...)
	if !cmd.Flags().Changed("repetitions") && m.Adaptive == nil && m.Repetitions > 0 {
		in.reps = m.Repetitions
	}
	if !cmd.Flags().Changed("seed") && m.Order == "random" && m.Seed != 0 {
		in.seed = m.Seed
	}
	pl, _, err := buildPlan(stderr, file, &in, false)
	if err != nil {
		return nil, "", in, err
	}
	if got := run.PipelineSHA256(pl.Pipeline); got != m.Pipeline.SHA256 {
		return nil, "", in, &exitError{code: 1, err: fmt.Errorf("bundle %s: its pipeline %s has sha256 %.12s…, but manifest.json records %.12s… for the pipeline that ran: refusing it", dir, bundle.PipelineFile(m), got, orDash(m.Pipeline.SHA256))}
	}
	sb.checks = append(sb.checks, trust.Check{Name: "pipeline", OK: true, Detail: fmt.Sprintf("%s has the sha256 manifest.json records (%.12s…)", bundle.PipelineFile(m), m.Pipeline.SHA256)})
	return pl, file, in, nil
}

// trustPlan is what reproduce shows of pl before it runs, and the
// sandbox it would run in, writing into out.
func trustPlan(f *reproduceFlags, dir, out string, pl *plan.Plan, sb *stagedBundle, grants []sandbox.Grant) (*trust.Plan, sandbox.Spec) {
	red, own := readerSensitive(pl, f.vf)
	tp := trust.InspectRedacting(pl, red)
	tp.Bundle, tp.Checks = dir, sb.checks
	for _, name := range own {
		tp.Notes = append(tp.Notes, fmt.Sprintf("sensitive variable %s: its value is the bundle's own default (in its pipeline, as public as the rest), shown in the plan; --var %s=… gives yours", name, name))
	}
	tp.Notes = append(tp.Notes, "results: only under "+f.out+" (--out)")
	if d := pl.Pipeline.Output.Dir; d != "" && d != "results" {
		tp.Notes = append(tp.Notes, fmt.Sprintf("the bundle's output { dir = %q } is ignored: a bundle does not choose where results go", d))
	}
	spec := sandboxSpec(out, sb.stage, grants, f.vf.varFiles)
	if len(tp.Missing(grants)) == 0 {
		// The files the providers read here (an ssh key, known_hosts),
		// once their grant is given.
		spec.ReadOnly = append(spec.ReadOnly, tp.Reads...)
	}
	if f.noSandbox {
		tp.Sandbox = []string{"NONE (--no-sandbox): every command runs as you, with your files, your network and your privileges"}
	} else {
		tp.Sandbox = spec.Describe()
	}
	return tp, spec
}

// runReproduce is reproduce: the bundle checked and staged, its plan
// shown, consent, the run (confined unless --no-sandbox) and the verdict.
func runReproduce(cmd *cobra.Command, f *reproduceFlags, dir string) error {
	grants, err := f.grants()
	if err != nil {
		return err
	}
	sb, done, err := stageBundle(dir, f.allowedSigners)
	if err != nil {
		return err
	}
	defer done()
	pl, file, in, err := reproducePlan(cmd, f, dir, sb)
	if err != nil {
		return err
	}
	if f.out == "" {
		f.out = bundle.ReproduceDir(pl.Pipeline.Name)
	}
	absOut, err := filepath.Abs(f.out)
	if err != nil {
		return &exitError{code: 1, err: err}
	}
	tp, spec := trustPlan(f, dir, absOut, pl, sb, grants)
	missing := tp.Missing(grants)
	if f.noSandbox {
		missing = nil
	}
	// The plan is redacted by red (the reader's own sensitive values),
	// not by the process-wide set, which holds the bundle's defaults too.
	planOut, planErr := cmd.OutOrStdout(), io.Writer(stderr)
	if planOut == stdout {
		planOut = os.Stdout
	}
	if planErr == stderr {
		planErr = os.Stderr
	}
	if f.planOnly {
		if f.asJSON || f.format == "json" {
			return tp.WriteJSON(planOut)
		}
		if err := tp.WriteText(planOut); err != nil {
			return err
		}
		if len(missing) > 0 {
			fmt.Fprintln(cmd.OutOrStdout(), "\n"+missingText(missing))
		}
		return nil
	}
	// -q prints only the verdict: the plan is shown when consent is asked
	// for (or refused), not when --yes gave it.
	if !f.quiet || !f.yes {
		if err := tp.WriteText(planErr); err != nil {
			return err
		}
	}
	if len(missing) > 0 {
		return &exitError{code: 1, err: errors.New(missingText(missing) + "; nothing ran")}
	}
	if len(tp.Refused) > 0 && !f.noSandbox {
		return &exitError{code: 1, err: fmt.Errorf("this bundle does what the sandbox never allows: %s; nothing ran (--no-sandbox runs it unconfined, once you accept that)", escape.Terminal(strings.Join(tp.Refused, "; ")))}
	}
	if !f.noSandbox {
		if err := sandbox.Available(); err != nil {
			return &exitError{code: 1, err: fmt.Errorf("%w; nothing ran", err)}
		}
	}
	if err := consent(f.yes); err != nil {
		return err
	}
	if f.noSandbox && f.quiet {
		ft := &runSummaryFilter{w: stderr}
		saved := stderr
		stderr = ft
		defer func() { ft.Flush(); stderr = saved }()
	}
	runDir, runErr := reproduceRun(f, spec, pl, file, absOut, &in)
	if runDir == "" {
		return runErr
	}
	return judgeReproduction(cmd, f, dir, sb.published, runDir, runErr)
}

// reproduceRun runs the plan, confined by spec unless --no-sandbox, and
// returns the folder of the run it wrote ("" when there is none to judge:
// none written, or interrupted) and the run's error.
func reproduceRun(f *reproduceFlags, spec sandbox.Spec, pl *plan.Plan, file, absOut string, in *varFlags) (string, error) {
	var ee *exitError
	if !f.noSandbox {
		runDir, runErr := applyConfined(spec, file, absOut, in, f.quiet, f.verbose)
		if errors.As(runErr, &ee) && ee.code == 130 {
			return "", runErr
		}
		return runDir, runErr
	}
	sum, runErr := applyPlan(pl, run.Options{OutDir: absOut}, f.quiet, f.verbose)
	if errors.As(runErr, &ee) && ee.code == 130 || sum == nil {
		return "", runErr
	}
	return sum.Dir, runErr
}

// judgeReproduction writes the verdict of the run in runDir against the
// bundle, saves it into the run, and returns the exit the flags ask for.
func judgeReproduction(cmd *cobra.Command, f *reproduceFlags, dir string, published *results.Run, runDir string, runErr error) error {
	here, err := results.ReadRun(runDir)
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
	// The verdict quotes the bundle (claims, cells, environment fields):
	// on a terminal its control characters are shown, not sent (JSON
	// escapes them itself).
	vw := io.Writer(cmd.OutOrStdout())
	var tw *escape.TerminalWriter
	if f.format != "json" {
		tw = &escape.TerminalWriter{W: vw}
		vw = tw
	}
	if err := v.Write(vw, f.format); err != nil {
		return err
	}
	if tw != nil {
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if err := saveVerdict(runDir, v); err != nil {
		fmt.Fprintf(stderr, "warning: %v\n", err)
	}
	switch {
	case runErr != nil:
		return runErr
	case f.exitOn == "claims" && v.ClaimsFailed() > 0:
		return &exitError{code: 3, err: fmt.Errorf("%d claim(s) fail here", v.ClaimsFailed())}
	case f.exitOn == "cells" && v.CellsNotReproduced() > 0:
		return &exitError{code: 2, err: fmt.Errorf("%d cell(s) did not reproduce", v.CellsNotReproduced())}
	}
	return nil
}

// readerSensitive returns the values the plan redacts — those of the
// sensitive variables the reader gave (--var, or any --var-file: the
// reader's own secrets) — and the names of the sensitive variables whose
// value is the bundle's own default, which the plan shows: a default is
// in the bundle's pipeline for anyone to read, and may be the very
// command that runs. A value that is not a string, number or bool is
// redacted whoever gave it.
func readerSensitive(pl *plan.Plan, vf varFlags) (*redact.Set, []string) {
	given := map[string]bool{}
	for _, kv := range vf.vars {
		k, _, _ := strings.Cut(kv, "=")
		given[k] = true
	}
	red := &redact.Set{}
	var own []string
	for _, v := range pl.Pipeline.Variables {
		if !v.Sensitive {
			continue
		}
		val, ok := pl.Vars[v.Name]
		primitive := ok && !val.IsNull() && val.IsKnown() && val.Type().IsPrimitiveType()
		if given[v.Name] || len(vf.varFiles) > 0 || !primitive {
			if primitive {
				red.Add(plan.ValueString(val))
			} else {
				return redact.Default, nil
			}
			continue
		}
		own = append(own, v.Name)
	}
	return red, own
}

// missingText names the grants a plan needs that were not given, and the
// flag that gives them.
func missingText(missing []trust.Need) string {
	var parts, flags []string
	for _, n := range missing {
		parts = append(parts, fmt.Sprintf("%s (%s: %s)", n.Grant, trust.GrantMeaning(n.Grant), strings.Join(n.Why, "; ")))
		flags = append(flags, "--allow "+string(n.Grant))
	}
	return fmt.Sprintf("this bundle needs what the sandbox does not give: %s; rerun with %s once you accept that, or with --no-sandbox to run it unconfined", strings.Join(parts, ", "), strings.Join(flags, " "))
}

// consent asks on a terminal for "yes"; without one it needs --yes.
func consent(yes bool) error {
	if yes {
		return nil
	}
	if !isTerminal(os.Stdin) {
		return &exitError{code: 1, err: errors.New("no terminal to ask on: read the plan above and pass --yes to run it (or --plan to only print it); nothing ran")}
	}
	fmt.Fprint(stderr, "\n"+consentPrompt)
	line, _ := bufio.NewReader(os.Stdin).ReadString('\n')
	if strings.TrimSpace(line) != "yes" {
		return &exitError{code: 1, err: errors.New("reproduce cancelled (only 'yes' runs the bundle); nothing ran")}
	}
	return nil
}

// sandboxSpec is the confinement of a reproduction writing into out, with
// the staged bundle in stage: read-write out (and, with the tune grant, a
// state folder of its own in stage, whose journal reproduce restores from
// when the run ends: restoreTuneJournals), read-only the staged bundle,
// the executable and the --var-file files.
func sandboxSpec(out, stage string, grants []sandbox.Grant, varFiles []string) sandbox.Spec {
	s := sandbox.Spec{ReadWrite: []string{out}, ReadOnly: []string{stage}, Grants: grants, Dir: out}
	if exe, err := os.Executable(); err == nil {
		s.ReadOnly = append(s.ReadOnly, exe)
	}
	for _, f := range varFiles {
		if abs, err := filepath.Abs(f); err == nil {
			s.ReadOnly = append(s.ReadOnly, abs)
		}
	}
	var specs []grant.Spec
	for _, g := range grants {
		if sp, ok := grant.Lookup(g); ok {
			specs = append(specs, sp)
		}
	}
	state := "/tmp/benchflow-state"
	if slices.Contains(grants, sandbox.GrantTune) {
		// Not the machine's state folder: a journal written there is
		// restored, unchecked, by the next gc as root — a bundle could
		// write one setting kernel.core_pattern. A folder of the private
		// staging instead, which reproduce restores from itself once the
		// run ends, only the sysctls the grant allows.
		state = filepath.Join(stage, "state")
		s.ReadWrite = append(s.ReadWrite, state)
	}
	s.Env = []string{"HOME=/tmp", "BENCHFLOW_STATE_DIR=" + state, "BENCHFLOW_SANDBOX=" + sandboxNote(grants)}
	if slices.ContainsFunc(specs, func(sp grant.Spec) bool { return sp.ServicesOutside }) {
		// A daemon outside the sandbox (dockerd) mounts the services'
		// files by their host path: they cannot be in the private /tmp.
		s.Env = append(s.Env, "BENCHFLOW_TMPDIR="+servicesDir(out))
	}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if sandboxEnvKept(k, specs) {
			s.Env = append(s.Env, kv)
		}
	}
	for _, sp := range specs {
		if sp.SetEnv == nil {
			continue
		}
		for _, kv := range sp.SetEnv(os.Getenv) {
			k, _, _ := strings.Cut(kv, "=")
			s.Env = slices.DeleteFunc(s.Env, func(e string) bool { return strings.HasPrefix(e, k+"=") })
			s.Env = append(s.Env, kv)
		}
	}
	return s
}

// sandboxEnv are the variables of this process's environment passed into
// the sandbox: an allow-list of settings that are not secrets (the rest —
// BENCHFLOW_AGENT_TOKEN, cloud credentials, SSH_AUTH_SOCK, anything else —
// stays out). HOME, BENCHFLOW_STATE_DIR, BENCHFLOW_SANDBOX and
// BENCHFLOW_TMPDIR are set by sandboxSpec itself.
var sandboxEnv = map[string]bool{
	"PATH": true, "LANG": true, "LANGUAGE": true, "TZ": true, "NO_COLOR": true, "USER": true, "LOGNAME": true,
	// how the load generator polls: a setting, not a secret
	"BENCHFLOW_LOAD_ENGINE": true,
}

// sandboxEnvKept says whether the variable k goes into the sandbox given
// the grants' declarations: LC_* always; what a grant's Env keeps with it
// (DOCKER_HOST with docker, KUBECONFIG with k8s, NOMAD_*, CONSUL_* and
// APISIX_* with nomad, SSH_AUTH_SOCK with ssh).
func sandboxEnvKept(k string, specs []grant.Spec) bool {
	if sandboxEnv[k] || strings.HasPrefix(k, "LC_") {
		return true
	}
	for _, sp := range specs {
		if sp.Env != nil && sp.Env(k) {
			return true
		}
	}
	return false
}

// sandboxNote is what the run in the sandbox records of it (its
// manifest's environment.sandbox, read by envinfo): the grants and whether
// the network is the host's, so that a comparison says which fields the
// sandbox hid (results.Differences).
func sandboxNote(grants []sandbox.Grant) string {
	names := make([]string, len(grants))
	network := "own"
	for i, g := range grants {
		names[i] = string(g)
		if sp, ok := grant.Lookup(g); ok && sp.HostNetwork {
			network = "host"
		}
	}
	sort.Strings(names)
	return "bubblewrap; grants: " + cmp.Or(strings.Join(names, ", "), "none") + "; network: " + network
}

// servicesDir is where the services' files are rendered when a daemon
// outside the sandbox reads them: a folder of the run's --out.
func servicesDir(out string) string { return filepath.Join(out, ".benchflow-services") }

// applyConfined runs `benchflow apply FILE --out OUT …` in the sandbox
// spec, forwarding Ctrl-C and SIGTERM (the first stops the run and waits
// for its teardown, a second forces it, as apply does), and returns the
// folder of the run it wrote ("" when it wrote none) and an *exitError
// with the child's status.
func applyConfined(spec sandbox.Spec, file, out string, vf *varFlags, quiet, verbose bool) (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", &exitError{code: 1, err: fmt.Errorf("finding benchflow's executable: %w", err)}
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return "", &exitError{code: 1, err: err}
	}
	for _, d := range spec.ReadWrite[1:] {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return "", &exitError{code: 1, err: err}
		}
	}
	for _, kv := range spec.Env {
		if d, ok := strings.CutPrefix(kv, "BENCHFLOW_TMPDIR="); ok {
			if err := os.Mkdir(d, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
				return "", &exitError{code: 1, err: err}
			}
			// Emptied by the run's teardown (gc removes what a killed
			// run left); only an empty folder is removed.
			defer os.Remove(d)
		}
	}
	// --no-gc: the confined apply removes no leftovers of other runs
	// (there are none of its own: nothing outlives its sandbox).
	argv := []string{exe, "apply", file, "--out", out, "--no-gc"}
	for _, kv := range vf.vars {
		argv = append(argv, "--var", kv)
	}
	for _, f := range vf.varFiles {
		abs, _ := filepath.Abs(f)
		argv = append(argv, "--var-file", abs)
	}
	if vf.reps > 0 {
		argv = append(argv, "--repetitions", strconv.Itoa(vf.reps))
	}
	if vf.seed != 0 {
		argv = append(argv, "--seed", strconv.FormatInt(vf.seed, 10))
	}
	argv = append(argv, "--max-trials", strconv.Itoa(vf.maxTrials))
	if quiet {
		argv = append(argv, "-q")
	}
	if verbose {
		argv = append(argv, "-v")
	}
	before, err := runFolders(out)
	if err != nil {
		return "", &exitError{code: 1, err: err}
	}
	c, err := spec.Command(context.Background(), argv)
	if err != nil {
		return "", &exitError{code: 1, err: err}
	}
	// No terminal inside: standard input is /dev/null, and the output
	// comes through a pipe (a terminal's descriptor could be read from,
	// by a leftover too), shown with its control characters escaped.
	c.Stdin = nil
	tw := &escape.TerminalWriter{W: os.Stderr}
	defer tw.Flush()
	c.Stdout, c.Stderr = tw, tw
	if quiet {
		f := &runSummaryFilter{w: tw}
		defer f.Flush()
		c.Stdout, c.Stderr = f, f
	}
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	if err := c.Start(); err != nil {
		return "", &exitError{code: 1, err: fmt.Errorf("starting the sandbox: %w", err)}
	}
	done := make(chan struct{})
	defer close(done)
	go func() {
		for {
			select {
			case <-done:
				return
			case <-sigs:
				// The sandbox runs in a session of its own: the terminal's
				// Ctrl-C reaches only this process, which passes it on.
				_ = c.Cancel()
			}
		}
	}()
	waitErr := c.Wait()
	code := 0
	var xe *exec.ExitError
	switch {
	case waitErr == nil:
	case errors.As(waitErr, &xe):
		code = xe.ExitCode()
		if code < 0 {
			code = 130 // killed by a signal
		}
	default:
		return "", &exitError{code: 1, err: fmt.Errorf("running the sandbox: %w", waitErr)}
	}
	var runErr error
	switch code {
	case 0:
	case 130:
		runErr = &exitError{code: 130, err: errors.New("interrupted")}
	default:
		runErr = &exitError{code: 1, err: fmt.Errorf("the confined run exited with status %d", code)}
	}
	// Nothing of the sandbox runs any more (Wait returned once its last
	// process was gone): what it left in out stays as it is now.
	for _, kv := range spec.Env {
		if d, ok := strings.CutPrefix(kv, "BENCHFLOW_STATE_DIR="); ok && slices.Contains(spec.ReadWrite, d) {
			restored, err := restoreTuneJournals(d, spec.SharesPIDs() || slices.Contains(spec.Grants, sandbox.GrantHostNetwork))
			for _, r := range restored {
				fmt.Fprintf(stderr, "restored what the reproduction changed: %s\n", escape.Terminal(r))
			}
			if err != nil {
				fmt.Fprintf(stderr, "warning: %s\n", escape.Terminal(err.Error()))
			}
		}
	}
	dir, err := newRun(out, before)
	if err != nil {
		if runErr != nil {
			return "", runErr
		}
		return "", &exitError{code: 1, err: err}
	}
	return dir, runErr
}

// restoreTuneJournals puts back the sysctls a confined run's tune steps
// changed, from the journals it wrote in its state folder dir (the
// sandbox's to write: each entry is checked). Only the sysctls the tune
// grant allows are written (sandbox.TuneSysctlAllowed), at their
// /proc/sys path; net.* only when the run shared the host's network (its
// own network namespace, and its values, are gone with it). It returns
// what it restored, and what it refused or could not write.
func restoreTuneJournals(dir string, hostNet bool) ([]string, error) {
	files, _ := filepath.Glob(filepath.Join(dir, "tune-journal", "*.json"))
	var done []string
	var errs []error
	for _, f := range files {
		b, err := os.ReadFile(f)
		var j struct {
			Sysctls []struct {
				Path     string `json:"path"`
				Original string `json:"original"`
			} `json:"sysctls"`
		}
		if err == nil {
			err = json.Unmarshal(b, &j)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("the reproduction's tune journal %s: %w", filepath.Base(f), err))
			continue
		}
		for i := len(j.Sysctls) - 1; i >= 0; i-- {
			e := j.Sysctls[i]
			rel, ok := strings.CutPrefix(e.Path, "/proc/sys/")
			key := strings.ReplaceAll(rel, "/", ".")
			switch {
			case !ok || filepath.Clean(e.Path) != e.Path || !sandbox.TuneSysctlAllowed(key):
				errs = append(errs, fmt.Errorf("the reproduction's tune journal names %q, which the tune grant does not allow: not written", e.Path))
				continue
			case strings.HasPrefix(key, "net.") && !hostNet:
				continue // its own network namespace's, gone
			}
			fh, err := os.OpenFile(e.Path, os.O_WRONLY|syscall.O_NOFOLLOW, 0)
			if err == nil {
				_, err = fh.WriteString(e.Original)
				if cerr := fh.Close(); err == nil {
					err = cerr
				}
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("restoring sysctl %s to %q: %w", key, e.Original, err))
				continue
			}
			done = append(done, fmt.Sprintf("sysctl %s = %s", key, e.Original))
		}
	}
	return done, errors.Join(errs...)
}

// runFolders lists the names in out, which the sandbox writes.
func runFolders(out string) (map[string]bool, error) {
	ents, err := os.ReadDir(out)
	if err != nil {
		return nil, err
	}
	m := map[string]bool{}
	for _, e := range ents {
		m[e.Name()] = true
	}
	return m, nil
}

// newRun finds the run the confined apply wrote in out: the one folder
// that was not there before (a real folder, with a manifest.json), never
// what a symbolic link the sandbox could move names — so it cannot be an
// earlier run of the reader's. Its latest link is made again here, by
// this process. A run folder holding a symbolic link is refused: the
// verdict is read, and written, by this unconfined process.
func newRun(out string, before map[string]bool) (string, error) {
	ents, err := os.ReadDir(out)
	if err != nil {
		return "", err
	}
	var runs []string
	for _, e := range ents {
		if before[e.Name()] || !e.IsDir() || e.Type()&fs.ModeSymlink != 0 {
			continue
		}
		if fi, err := os.Lstat(filepath.Join(out, e.Name(), "manifest.json")); err == nil && fi.Mode().IsRegular() {
			runs = append(runs, e.Name())
		}
	}
	switch len(runs) {
	case 0:
		return "", fmt.Errorf("the confined run wrote no run folder in %s", out)
	case 1:
	default:
		return "", fmt.Errorf("the confined run left %d new run folders in %s (%s), not one: judging none", len(runs), out, strings.Join(runs, ", "))
	}
	dir := filepath.Join(out, runs[0])
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && !d.Type().IsRegular() {
			return fmt.Errorf("the confined run's folder holds %s, which is not a regular file (%s): not reading it", p, d.Type())
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	latest := filepath.Join(out, "latest")
	tmp := filepath.Join(out, ".latest-"+strconv.Itoa(os.Getpid()))
	os.Remove(tmp)
	if err := os.Symlink(runs[0], tmp); err == nil {
		if fi, err := os.Lstat(latest); err == nil && fi.IsDir() {
			os.Remove(tmp) // a folder named latest: left as it is
		} else if err := os.Rename(tmp, latest); err != nil {
			os.Remove(tmp)
		}
	}
	return dir, nil
}

// runSummaryFilter passes a quiet run's output on (its warnings and
// failures) but for the lines of its final summary ("run … ok: …",
// "results: …", "claims: …"): with reproduce -q the verdict says which
// run it judged, and is all that is printed of a run that went well.
type runSummaryFilter struct {
	w    io.Writer
	mu   sync.Mutex
	line []byte
}

var runSummaryLine = regexp.MustCompile(`^(run \S+ [a-z]+: \d+ ok, \d+ failed|results: |claims: )`)

func (f *runSummaryFilter) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.line = append(f.line, p...)
	for {
		i := bytes.IndexByte(f.line, '\n')
		if i < 0 {
			return len(p), nil
		}
		l := f.line[:i+1]
		if !runSummaryLine.Match(l) {
			if _, err := f.w.Write(l); err != nil {
				return 0, err
			}
		}
		f.line = f.line[i+1:]
	}
}

// Flush writes what is left of a last line without a newline.
func (f *runSummaryFilter) Flush() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.line) > 0 && !runSummaryLine.Match(f.line) {
		f.w.Write(f.line)
	}
	f.line = nil
}

func orDash(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
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
