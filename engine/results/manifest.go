package results

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/benchflow/benchflow/engine/scratch"
)

// SchemaVersion is written to manifest.json and to the key-value metadata
// (key MetadataKeySchemaVersion) of every table. It changes when a column is
// renamed or removed or changes meaning; adding columns keeps it.
const SchemaVersion = "1"

// MetadataKeySchemaVersion is the Parquet/Arrow key-value metadata key that
// carries SchemaVersion.
const MetadataKeySchemaVersion = "benchflow.schema_version"

// Output formats (Manifest.OutputFormat).
const (
	FormatParquet = "parquet"
	FormatArrow   = "arrow"
)

// Run statuses (Manifest.Status). Trial statuses are the Status* constants
// in record.go.
const (
	RunRunning     = "running"
	RunOK          = "ok"
	RunFailed      = "failed"
	RunInterrupted = "interrupted"
)

// ErrPipelineChanged is returned by Manifest.CheckResumable when the
// pipeline source or its variables differ from the recorded run.
var ErrPipelineChanged = errors.New("pipeline changed since the run started")

// NewRunID returns a run id for a run started at t: the UTC time in compact
// ISO 8601 form and a random 4-hex-digit suffix, e.g.
// "20261130T044500Z-3f9c". Ids sort by start time.
func NewRunID(t time.Time) string {
	var b [2]byte
	if _, err := rand.Read(b[:]); err != nil {
		// crypto/rand does not fail on Linux; keep ids valid regardless.
		b[0], b[1] = byte(t.Nanosecond()>>8), byte(t.Nanosecond())
	}
	return t.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
}

// Manifest is manifest.json: what ran, where, and the status of every
// trial. The JSON field names are part of the results contract
// (docs/results.md).
type Manifest struct {
	// Private makes Create write the run folder 0700 and its files 0600
	// (a pipeline with sensitive variables); not recorded. A resumed run
	// keeps the mode of its folder.
	Private bool `json:"-"`

	SchemaVersion    string         `json:"schema_version"`
	RunID            string         `json:"run_id"`
	Pipeline         PipelineInfo   `json:"pipeline"`
	BenchflowVersion string         `json:"benchflow_version"`
	StartedAt        time.Time      `json:"started_at"`
	FinishedAt       *time.Time     `json:"finished_at"`
	Status           string         `json:"status"`
	Order            string         `json:"order"`
	Seed             int64          `json:"seed"`
	Repetitions      int            `json:"repetitions"`
	Matrix           map[string]any `json:"matrix"` // axis -> list of values
	// Axes is the matrix axis order (the order of the param_<axis>
	// columns). When empty, the order of the first committed trial's
	// Params is used.
	Axes []string `json:"axes,omitempty"`
	// Environment is filled by the executor from engine/envinfo; the
	// "fingerprint" key (a string) identifies the machine and software.
	Environment  map[string]any `json:"environment"`
	OutputFormat string         `json:"output_format"` // FormatParquet (default) or FormatArrow
	Trials       []TrialEntry   `json:"trials"`
	// Discarded are the attempts run again because the machine was busy
	// (pipeline busy_rerun), each with Discarded saying why; their rows
	// are in the tables (discarded = true) under their own trial ids.
	// Trials holds the attempts that count, one per planned trial.
	Discarded []TrialEntry `json:"discarded,omitempty"`
	// ExcludeUnsteady is the pipeline's exclude_unsteady: the report
	// leaves unsteady repetitions out of its intervals.
	ExcludeUnsteady bool `json:"exclude_unsteady,omitempty"`
	// Adaptive records adaptive repetitions: the settings, the rounds run
	// and why the run stopped adding rounds. Absent for fixed repetitions.
	Adaptive *AdaptiveRecord `json:"adaptive,omitempty"`
	// Claims are the pipeline's claim blocks (claims.go), evaluated by
	// the report from the run folder alone.
	Claims []ClaimSpec `json:"claims,omitempty"`
}

// AdaptiveRecord is manifest.json "adaptive".
type AdaptiveRecord struct {
	Min       int     `json:"min"`
	Max       int     `json:"max"`
	Precision float64 `json:"precision"` // fraction: 0.03 = 3%
	BudgetS   float64 `json:"budget_s,omitempty"`
	Rounds    int     `json:"rounds"`
	// Stopped is "precision" (every cell precise enough), "max" (the
	// cells still imprecise reached max), "budget" (the next round would
	// not fit), "interrupted", "aborted" (on_failure) or "error".
	Stopped string `json:"stopped"`
	Reason  string `json:"reason"`
	// Cells are the matrix cells × load steps with their repetitions and
	// final relative half-width (null when there is no interval).
	Cells []AdaptiveCell `json:"cells"`
}

// AdaptiveCell is one cell × load step of AdaptiveRecord.
type AdaptiveCell struct {
	Params      map[string]any `json:"params"`
	Step        string         `json:"step"`
	Repetitions int            `json:"repetitions"`
	HalfWidth   *float64       `json:"half_width"`
}

// PipelineInfo identifies the pipeline that ran.
type PipelineInfo struct {
	Name   string `json:"name"`
	File   string `json:"file"`
	SHA256 string `json:"sha256"`
	// PlanSHA256 is plan.StudySHA256: equal for runs of the same study,
	// whichever front end or repetition count ran it. Empty in runs
	// written before it existed.
	PlanSHA256 string `json:"plan_sha256,omitempty"`
	Format     string `json:"format"` // "hcl" or "star"
	// Files are the files the pipeline read besides itself (Starlark
	// load(), file(), templatefile(), file blocks, body_file, script),
	// copied into the run directory under sources/. SHA256 covers the
	// load()ed ones too.
	Files []PipelineFile `json:"files,omitempty"`
	// Variables are the effective variable values, secrets redacted by
	// the executor.
	Variables map[string]any `json:"variables"`
}

// PipelineFile is a loaded file kept with the run.
type PipelineFile struct {
	Path   string `json:"path"` // relative to the pipeline's folder, and to sources/
	SHA256 string `json:"sha256"`
}

// TrialEntry is one trial in manifest.json.
type TrialEntry struct {
	TrialID    string `json:"trial_id"`
	Index      int    `json:"index"`
	Repetition int    `json:"repetition"`
	// Attempt and Discarded: see TrialRecord (absent for a first
	// attempt that counts, and in runs written before they existed).
	Attempt    int            `json:"attempt,omitempty"`
	Discarded  string         `json:"discarded,omitempty"`
	Params     map[string]any `json:"params"`
	Provider   string         `json:"provider"`
	Status     string         `json:"status"`
	Error      string         `json:"error,omitempty"`
	StartedAt  *time.Time     `json:"started_at"`
	FinishedAt *time.Time     `json:"finished_at"`
	// Services says where each service ran (provider, URL, attributes).
	Services []ServiceEntry `json:"services,omitempty"`
}

// Fingerprint returns Environment["fingerprint"] or "".
func (m *Manifest) Fingerprint() string {
	if m == nil || m.Environment == nil {
		return ""
	}
	s, _ := m.Environment["fingerprint"].(string)
	return s
}

// Trial returns the entry of trialID, or nil; a discarded attempt's
// entry too (Discarded).
func (m *Manifest) Trial(trialID string) *TrialEntry {
	for i := range m.Trials {
		if m.Trials[i].TrialID == trialID {
			return &m.Trials[i]
		}
	}
	for i := range m.Discarded {
		if m.Discarded[i].TrialID == trialID {
			return &m.Discarded[i]
		}
	}
	return nil
}

// RanOn reports whether the trial deployed a service on a provider of
// type typ ("docker"): the one test of a trial's provider type, by the
// type each service recorded, never by a provider's name.
func (t *TrialEntry) RanOn(typ string) bool {
	for _, s := range t.Services {
		if s.Type == typ {
			return true
		}
	}
	return false
}

// Done reports whether trialID completed (status "ok" or "skipped") and
// need not run again on resume.
func (m *Manifest) Done(trialID string) bool {
	t := m.Trial(trialID)
	return t != nil && (t.Status == StatusOK || t.Status == StatusSkipped)
}

// CheckResumable compares the recorded pipeline with the one about to
// resume it. It returns an error wrapping ErrPipelineChanged that names
// what differs (source hash, or which variables), or nil.
func (m *Manifest) CheckResumable(sha256 string, variables map[string]any) error {
	if m.Pipeline.SHA256 != sha256 {
		return fmt.Errorf("%w: source sha256 %.12s… was %.12s…", ErrPipelineChanged, sha256, m.Pipeline.SHA256)
	}
	// Compare through JSON so that numbers read back from manifest.json
	// (float64) equal the ints the executor passes.
	norm := func(v map[string]any) (map[string]json.RawMessage, error) {
		out := map[string]json.RawMessage{}
		for k, x := range v {
			b, err := json.Marshal(x)
			if err != nil {
				return nil, fmt.Errorf("encoding variable %q: %w", k, err)
			}
			var y any
			_ = json.Unmarshal(b, &y)
			b, _ = json.Marshal(y)
			out[k] = b
		}
		return out, nil
	}
	a, err := norm(m.Pipeline.Variables)
	if err != nil {
		return err
	}
	b, err := norm(variables)
	if err != nil {
		return err
	}
	var diff []string
	for k, va := range a {
		if vb, ok := b[k]; !ok {
			diff = append(diff, fmt.Sprintf("%s removed", k))
		} else if !bytes.Equal(va, vb) {
			diff = append(diff, fmt.Sprintf("%s: %s → %s", k, va, vb))
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			diff = append(diff, fmt.Sprintf("%s added", k))
		}
	}
	if len(diff) > 0 {
		sortStrings(diff)
		return fmt.Errorf("%w: variables differ (%s)", ErrPipelineChanged, joinComma(diff))
	}
	return nil
}

// ReadManifest reads dir/manifest.json (a regular file of bounded size,
// checked: schema version, run id, statuses) and the entries of the
// trials in dir/parts/ (see Writer), which are newer.
func ReadManifest(dir string) (*Manifest, error) {
	path := filepath.Join(dir, "manifest.json")
	b, err := readBounded(path, maxManifestBytes)
	if err != nil {
		return nil, fmt.Errorf("reading manifest: %w", err)
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("parsing %s: %w", path, err)
	}
	if err := m.validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	// The trials committed since manifest.json was last rewritten carry
	// their entries in their part folders.
	if err := overlayParts(dir, &m); err != nil {
		return nil, err
	}
	return &m, nil
}

func writeManifest(dir string, m *Manifest) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding manifest: %w", err)
	}
	b = append(b, '\n')
	err = writeFileAtomic(runJournal(dir), filepath.Join(dir, "manifest.json"), func(f *os.File) error {
		_, err := f.Write(b)
		return err
	})
	if err != nil && isNoSpace(err) && overwriteManifest(dir, m) == nil {
		return nil // the disk is full: rewritten in place
	}
	return err
}

// runJournal is the journal of the run folder dir as its writer uses it:
// kept between records, removed (Tidy) when the writer lets go of the run.
func runJournal(dir string) *scratch.Journal { return scratch.Run(dir).Kept() }

// writeFileAtomic writes path through a temporary file in the same folder,
// fsyncs it, renames it into place and fsyncs the folder, so readers see
// the old or the new content, never a truncated file. The temporary file
// is recorded in j before it is made (scratch: a killed writer's is
// removed by the next cleanup); nil j is for a file inside a staging
// folder, whose own record covers what it holds.
func writeFileAtomic(j *scratch.Journal, path string, write func(f *os.File) error) (err error) {
	dir := filepath.Dir(path)
	var f *os.File
	var rec *scratch.Record
	if j == nil {
		f, err = os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	} else {
		f, rec, err = j.CreateTemp(dir, "."+filepath.Base(path)+".tmp-")
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
		rec.Done()
	}()
	if err = write(f); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("syncing %s: %w", path, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("closing %s: %w", path, err)
	}
	if err = os.Chmod(tmp, filePerm(dir)); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err = os.Rename(tmp, path); err != nil {
		return fmt.Errorf("renaming into %s: %w", path, err)
	}
	syncDir(dir)
	return nil
}

func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}

// filePerm is the mode of a results file written into dir: 0600 when the
// run folder (dir, or the run folder a staging folder is in) is private
// (0700), 0644 otherwise.
func filePerm(dir string) os.FileMode {
	if strings.HasPrefix(filepath.Base(dir), ".staging-") {
		dir = filepath.Dir(dir)
	}
	if isPrivate(dir) {
		return 0o600
	}
	return 0o644
}

// isPrivate reports whether dir is accessible to its owner only.
func isPrivate(dir string) bool {
	fi, err := os.Stat(dir)
	return err == nil && fi.Mode().Perm()&0o077 == 0
}

// dirPerm is the mode of a folder made inside a run folder.
func dirPerm(runDir string) os.FileMode {
	if isPrivate(runDir) {
		return 0o700
	}
	return 0o755
}
