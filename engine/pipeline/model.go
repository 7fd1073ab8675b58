package pipeline

import (
	"io/fs"
	"path"

	"github.com/benchflow/benchflow/engine/claims"
	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// The names of the step kinds; engine/steps declares each kind (schema,
// phase, validation, run).
const (
	KindProvision = "provision"
	KindTune      = "tune"
	KindCheck     = "check"
	KindExec      = "exec"
	KindWarm      = "warm"
	KindLoad      = "load"
	KindCollect   = "collect"
)

// IsMeasurement reports whether results recorded under this step kind (a
// trials row's step_kind, a trial record's step kind; "" for a trial
// without a step) are measurements: a warm step's are not (it primes the
// service; its rows are kept apart from statistics, claims and the
// machine's state). The one place that says so: test a kind or a
// step_kind with this, not against "warm". (steps.Behaviour.Measures says
// which kinds measure when declaring them.)
func IsMeasurement(stepKind string) bool { return stepKind != KindWarm }

// DefaultBusyRerun is BusyRerun when the pipeline does not set busy_rerun;
// MaxBusyRerun bounds it.
const (
	DefaultBusyRerun = 2
	MaxBusyRerun     = 10
)

// DefaultBusyGiveUp is BusyGiveUp when the pipeline does not set
// busy_give_up; MaxBusyGiveUp bounds it.
const (
	DefaultBusyGiveUp = 2
	MaxBusyGiveUp     = 100
)

// Trial orders.
const (
	OrderInterleaved = "interleaved"
	OrderSequential  = "sequential"
	OrderRandom      = "random"
)

// Pipeline is one study as written by a user: the fixed structure is decoded,
// everything that may depend on a trial (matrix values, service addresses) is
// kept as HCL bodies and expressions and evaluated by engine/plan per trial.
//
// Both front ends (engine/hclconf and engine/starconf) produce this model.
type Pipeline struct {
	Name        string
	Description string
	Repetitions int // >= 1; with Adaptive, its Min
	// Adaptive is set by repetitions = { min, max, precision, budget };
	// nil for a fixed number of repetitions.
	Adaptive *Adaptive
	Order    string // OrderInterleaved (default), OrderSequential, OrderRandom
	Seed     int64  // seed for OrderRandom; 0 means "pick one and record it"
	// OnFailure: "continue" (default: go on after a failed trial, but
	// stop when the first two trials fail the same way), "abort" (stop
	// at the first failed trial) or "all" (run every trial).
	OnFailure string
	// ReuseServices keeps a service running between consecutive trials
	// whose service inputs are identical (default false: every trial
	// provisions afresh).
	ReuseServices bool
	// ExcludeUnsteady leaves the repetitions whose load step failed the
	// steadiness check out of the report's intervals (they stay in the
	// results and are shown, flagged). Default false: flagged, kept.
	ExcludeUnsteady bool
	// BusyRerun is how many times a trial that found the machine busy
	// (a busy start, or a noisy verdict: processes outside the run used
	// the CPU during its load) is run again, at once, before the next
	// trial; the busy attempts stay in the tables, flagged discarded, and
	// out of the estimates. DefaultBusyRerun unless busy_rerun is set; 0
	// turns re-runs off. Only loads with a whole-machine collect step can
	// find the machine busy.
	BusyRerun int
	// BusyGiveUp is how many attempts in a row (of one trial or of
	// consecutive trials) may find the machine busy before re-running
	// stops for the rest of the run: a machine busy that long is busy
	// for a reason the next attempt will meet too. The busy trials are
	// kept, flagged noisy. DefaultBusyGiveUp unless busy_give_up is set;
	// 0 never gives up (every busy trial is re-run busy_rerun times).
	BusyGiveUp int

	Variables []*Variable
	Locals    []*Local
	Matrix    *Matrix // never nil after decoding; may have no axes
	Providers []*Provider
	Services  []*Service
	Steps     []*Step
	Output    OutputSettings
	// Claims are the study's conclusions (claim blocks), in declaration
	// order; every run evaluates them (see claims.go).
	Claims []*claims.Claim

	// File is the path of the pipeline file as given; Dir is the folder that
	// file() and templatefile() resolve against.
	File   string
	Dir    string
	FS     fs.FS // rooted at Dir; file(), templatefile() and file blocks read from it
	Source []byte
	// Loaded are the files a Starlark pipeline pulled in with load(), in
	// the order they were first loaded: they are part of what ran.
	Loaded []LoadedFile
	// Format is "hcl" or "star".
	Format string

	DeclRange hcl.Range
}

// LoadedFile is a file a pipeline loaded, with its path relative to the
// pipeline's folder (slash-separated).
type LoadedFile struct {
	Path   string
	Source []byte
}

// Variable is an input variable (`variable "name" {}`), set with --var or
// --var-file or taken from its default.
type Variable struct {
	Name        string
	Description string
	Type        cty.Type  // cty.DynamicPseudoType when not constrained
	Default     cty.Value // cty.NilVal when the variable is required
	// Sensitive values are redacted in plan output, manifest.json and logs.
	Sensitive   bool
	Validations []*Validation
	DeclRange   hcl.Range
}

// Validation is a `validation {}` block of a variable.
type Validation struct {
	Condition    hcl.Expression
	ErrorMessage string
	DeclRange    hcl.Range
}

// Local is one entry of a `locals {}` block.
type Local struct {
	Name      string
	Expr      hcl.Expression
	DeclRange hcl.Range
}

// Matrix holds the parameter axes. A trial is one point of the cartesian
// product of the axes (minus Exclude, plus Include) times one repetition.
type Matrix struct {
	Axes []*Axis
	// Exclude removes every combination that matches all the keys of one of
	// its objects; Include adds combinations (objects with every axis set).
	Exclude   hcl.Expression // list of objects, or nil
	Include   hcl.Expression // list of objects, or nil
	DeclRange hcl.Range
}

// Axis is one named list of values, in declaration order.
type Axis struct {
	Name      string
	Expr      hcl.Expression // evaluates to a non-empty list/tuple of primitives
	DeclRange hcl.Range
}

// Provider is a named, configured backend (`provider "docker" "nat" {}`). Its
// body is decoded per trial with the provider type's own schema.
type Provider struct {
	Type      string
	Name      string
	Config    hcl.Body
	DeclRange hcl.Range
	TypeRange hcl.Range
}

// Service is a system under test. Its body is decoded per trial into a
// ServiceConfig (see schema.go).
type Service struct {
	Name      string
	Body      hcl.Body
	DeclRange hcl.Range
}

// Step is one node of the step DAG. Its body is decoded per trial with the
// schema of its kind (see schema.go).
type Step struct {
	Kind      string
	Name      string
	Body      hcl.Body
	DeclRange hcl.Range
}

// Addr is the address used in references: "load.wrk".
func (s *Step) Addr() string { return s.Kind + "." + s.Name }

// OutputSettings is the `output {}` block: where and how results are written.
type OutputSettings struct {
	Dir    string // default "results"
	Format string // "parquet" (default) or "arrow"
}

// New returns an empty pipeline with the defaults every front end starts
// from: one repetition, interleaved order, continue on failure, an empty
// matrix, results in "results" as Parquet. display is the file name shown
// in diagnostics; fsys is the pipeline's folder; format is "hcl" or "star".
func New(display string, fsys fs.FS, src []byte, format string) *Pipeline {
	return &Pipeline{
		Repetitions: 1,
		Order:       OrderInterleaved,
		OnFailure:   "continue",
		BusyRerun:   DefaultBusyRerun,
		BusyGiveUp:  DefaultBusyGiveUp,
		Matrix:      &Matrix{},
		File:        display,
		Dir:         path.Dir(display),
		FS:          fsys,
		Source:      src,
		Format:      format,
		Output:      OutputSettings{Dir: "results", Format: "parquet"},
	}
}
