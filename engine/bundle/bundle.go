package bundle

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/benchflow/benchflow/engine/claims"
	"github.com/benchflow/benchflow/engine/report"
	"github.com/benchflow/benchflow/engine/results"
	"github.com/benchflow/benchflow/engine/scratch"
)

// Files a bundle adds to its run folder.
const (
	SumsFile      = "SHA256SUMS"
	ReproduceFile = "REPRODUCE.md"
	MarkdownFile  = "report.md"
	HTMLFile      = "report.html"
	VariablesFile = "variables.json"
)

// generated are the files Publish writes itself: when the run folder is a
// bundle already, they are written anew rather than copied.
var generated = []string{SumsFile, SigFile, ReproduceFile, MarkdownFile, HTMLFile, VariablesFile}

// Droppable are the tables Options.Drop may leave out: the per-sample
// tables that dominate a bundle's size and that the summary table does
// not need (timeseries feeds the req/s-over-time chart, and compare's
// per-interval test for cells of fewer than 3 repetitions).
var Droppable = []string{results.TableTimeseries, results.TableProcesses, results.TableSystem, results.TableNetwork}

// Options tune Publish.
type Options struct {
	// Drop lists tables (Droppable) left out of the bundle.
	Drop []string
	// Logs keeps the run's logs/ folder (service output per trial); it is
	// left out by default: it is large and the report does not read it.
	Logs bool
	// Archive also writes DIR.tar.gz holding the bundle's folder.
	Archive bool
	// Force replaces an existing bundle at DIR (and so its signature).
	Force bool
	// Sign is the path of an SSH private key (see Sign) that signs the
	// bundle's SHA256SUMS into SigFile; "" leaves the bundle unsigned.
	Sign string
	// Report are the summary options of report.md and report.html.
	Report report.Options
}

// File is one file of a bundle.
type File struct {
	Path   string // slash-separated, relative to the bundle
	Bytes  int64
	SHA256 string
}

// Result is what Publish wrote.
type Result struct {
	Dir     string
	Archive string // "" without Options.Archive
	Files   []File // every file but SHA256SUMS and SigFile, sorted by path
	Dropped []string
	// Signature is the key that signed it (Present false: unsigned).
	Signature Signature
	// Unrecorded are the files and folders of the run folder that are not
	// a run's (a run writes its manifest, its pipeline, sources/ of the
	// files the manifest lists, its tables, parts/, logs/ and a
	// reproduction's verdict): left out, so that what a confined run
	// dropped into its folder is never published.
	Unrecorded []string
	// Skipped are the run's folders left out because they are bundles
	// themselves (an earlier publish into the run's logs).
	Skipped []string
}

// Bytes is the bundle's total size (SHA256SUMS and SigFile left out).
func (r *Result) Bytes() int64 {
	var n int64
	for _, f := range r.Files {
		n += f.Bytes
	}
	return n
}

// Publish writes the run folder runDir as a bundle into dir. dir must not
// exist, be empty, or (with Options.Force) be a bundle. The bundle is
// written into a staging folder beside dir and renamed into place, so a
// failure leaves nothing half-written.
func Publish(runDir, dir string, opts Options) (res *Result, err error) {
	run, err := results.ReadRun(runDir)
	if err != nil {
		return nil, fmt.Errorf("publishing: %w", err)
	}
	if run.Manifest.Status == results.RunRunning {
		return nil, fmt.Errorf("publishing %s: the run has status %q (still running, or killed: finish it with apply --resume)", run.Dir, run.Manifest.Status)
	}
	for _, t := range opts.Drop {
		if !slices.Contains(Droppable, t) {
			return nil, fmt.Errorf("publishing: cannot drop table %q (droppable: %s)", t, strings.Join(Droppable, ", "))
		}
	}
	// Both through symlinks: a link into the run folder (ln -s RUN/logs l;
	// publish RUN l/b) is inside it.
	absRun := resolved(run.Dir)
	absDir := resolved(dir)
	if absDir == absRun || strings.HasPrefix(absDir, absRun+string(filepath.Separator)) {
		return nil, fmt.Errorf("publishing: the bundle %s would be inside the run folder %s (%s)", dir, run.Dir, absDir)
	}
	if err := checkTarget(dir, opts.Force); err != nil {
		return nil, err
	}
	var key *SigningKey
	if opts.Sign != "" {
		// Before anything is written: a key that cannot sign fails first.
		if key, err = LoadSigningKey(opts.Sign); err != nil {
			return nil, fmt.Errorf("publishing: %w", err)
		}
		defer key.Close()
	}
	parent := filepath.Dir(absDir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, fmt.Errorf("publishing: %w", err)
	}
	// The staging folder is recorded before it is made: a killed publish's
	// is removed by gc (scratch.Machine).
	stage, rec, err := scratch.Machine().MkdirTemp(parent, "."+filepath.Base(absDir)+".tmp-", 0o700)
	if err != nil {
		return nil, fmt.Errorf("publishing: %w", err)
	}
	defer func() {
		if err != nil {
			os.RemoveAll(stage)
		}
		rec.Done()
	}()
	if err := os.Chmod(stage, 0o755); err != nil {
		return nil, fmt.Errorf("publishing: %w", err)
	}
	res = &Result{Dir: dir}
	dropped, skipped, unrecorded, err := copyRun(run, stage, opts)
	if err != nil {
		return nil, err
	}
	res.Dropped, res.Skipped, res.Unrecorded = dropped, skipped, unrecorded
	if err := writeGenerated(stage, filepath.Base(absDir), run.Manifest, opts, key, dropped); err != nil {
		return nil, err
	}
	files, err := listFiles(stage)
	if err != nil {
		return nil, err
	}
	if err := writeSums(stage, files); err != nil {
		return nil, err
	}
	res.Files = files
	if key != nil {
		if err := key.sign(stage); err != nil {
			return nil, fmt.Errorf("publishing: %w", err)
		}
		res.Signature = Signature{Present: true, KeyType: key.KeyType(), Fingerprint: key.Fingerprint()}
	}
	if opts.Force {
		// checkTarget saw only the bundle's own files (its SHA256SUMS) and
		// no symlink; RemoveTree follows none.
		if fi, err := os.Lstat(dir); err == nil && fi.IsDir() {
			if err := scratch.RemoveTree(filepath.Dir(absDir), filepath.Base(absDir)); err != nil {
				return nil, fmt.Errorf("publishing: replacing %s: %w", dir, err)
			}
		}
	} else if err := os.Remove(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("publishing: %w", err) // checkTarget saw it empty
	}
	if err := os.Rename(stage, dir); err != nil {
		return nil, fmt.Errorf("publishing: %w", err)
	}
	if opts.Archive {
		res.Archive = strings.TrimRight(dir, `/\`) + ".tar.gz"
		if err := WriteArchive(dir, res.Archive); err != nil {
			return res, err
		}
	}
	return res, nil
}

// resolved is p made absolute with every symlink resolved, as far as it
// exists (the rest is appended as given).
func resolved(p string) string {
	abs, err := filepath.Abs(p)
	if err != nil {
		return filepath.Clean(p)
	}
	rest := ""
	for at := abs; ; at = filepath.Dir(at) {
		if real, err := filepath.EvalSymlinks(at); err == nil {
			return filepath.Join(real, rest)
		}
		if filepath.Dir(at) == at {
			return abs
		}
		rest = filepath.Join(filepath.Base(at), rest)
	}
}

// checkTarget refuses a dir that holds something other than a bundle
// (with force) or anything at all (without). With force, the bundle is
// replaced only when it holds nothing but the files its SHA256SUMS lists
// (what publish wrote) and no symlink: benchflow deletes only what it
// recorded creating, and never through a symlink.
func checkTarget(dir string, force bool) error {
	if fi, err := os.Lstat(dir); err == nil && fi.Mode()&fs.ModeSymlink != 0 && force {
		return fmt.Errorf("publishing: %s is a symlink: not replacing what it points to (benchflow never deletes through one); name the folder itself", dir)
	}
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("publishing: %w", err)
	case len(entries) == 0:
		return nil
	case !force:
		return fmt.Errorf("publishing: %s exists and is not empty (--force replaces a bundle)", dir)
	}
	if fi, err := os.Lstat(filepath.Join(dir, SumsFile)); err != nil || !fi.Mode().IsRegular() {
		return fmt.Errorf("publishing: %s is not a bundle (no %s): not replacing it", dir, SumsFile)
	}
	sums, err := readSums(dir)
	if err != nil {
		return fmt.Errorf("publishing: %s: %w: not replacing it", dir, err)
	}
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("publishing: %w", err)
		}
		rel, _ := filepath.Rel(dir, p)
		slash := filepath.ToSlash(rel)
		switch {
		case d.IsDir():
			return nil
		case d.Type()&fs.ModeSymlink != 0:
			return fmt.Errorf("publishing: %s is a symlink: not replacing the bundle %s (benchflow never deletes through one)", p, dir)
		case !d.Type().IsRegular():
			return fmt.Errorf("publishing: %s is not a regular file: not replacing the bundle %s", p, dir)
		case slash == SumsFile, slash == SigFile:
			return nil
		case sums[slash] == "":
			return fmt.Errorf("publishing: %s is not one of the bundle's files (not in its %s): not replacing the bundle %s", p, SumsFile, dir)
		}
		return nil
	})
}

// copyRun copies the run folder into stage — every visible file: the
// manifest, the pipeline, sources/, the tables, the parts of a run not
// compacted yet, claims — except logs/ unless asked for and what Publish
// generates; compacts the copy (results.Compact: the run itself is not
// touched) and removes the dropped tables from it.
func copyRun(run *results.Run, stage string, opts Options) (dropped, skipped, unrecorded []string, err error) {
	skip := map[string]bool{}
	for _, f := range generated {
		skip[f] = true
	}
	recorded := runFiles(run.Manifest)
	err = filepath.WalkDir(run.Dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(run.Dir, p)
		if rel == "." {
			return nil
		}
		slash := filepath.ToSlash(rel)
		if strings.HasPrefix(d.Name(), ".") || (slash == "logs" && !opts.Logs) || skip[slash] {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !recorded(slash, d.IsDir()) {
			unrecorded = append(unrecorded, slash)
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		dst := filepath.Join(stage, rel)
		switch {
		case d.IsDir():
			// A bundle inside the run (published into its logs) is not
			// part of the run: never copied into a new bundle.
			if fi, err := os.Lstat(filepath.Join(p, SumsFile)); err == nil && fi.Mode().IsRegular() {
				skipped = append(skipped, slash)
				return filepath.SkipDir
			}
			return os.MkdirAll(dst, 0o755)
		case d.Type().IsRegular():
			return copyFile(p, dst)
		}
		return nil // sockets, links: not part of a run
	})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("publishing: copying the run: %w", err)
	}
	if _, err := os.Stat(filepath.Join(stage, results.PartsDir)); err == nil {
		if _, err := results.Compact(stage); err != nil {
			return nil, nil, nil, fmt.Errorf("publishing: %w", err)
		}
	}
	for _, t := range Droppable {
		if !slices.Contains(opts.Drop, t) {
			continue
		}
		for _, f := range []string{results.FormatParquet, results.FormatArrow} {
			name := results.TableFile(t, f)
			if err := os.Remove(filepath.Join(stage, name)); err == nil {
				dropped = append(dropped, name)
			} else if !errors.Is(err, fs.ErrNotExist) {
				return nil, nil, nil, fmt.Errorf("publishing: %w", err)
			}
		}
	}
	return dropped, skipped, unrecorded, nil
}

// runFiles returns whether a path of a run folder (slash-separated) is
// one a run writes: manifest.json, its pipeline, sources/ and the files
// the manifest lists there, the tables (Parquet or Arrow), parts/ and
// logs/ (whole), and a reproduction's reproduction.md and .json.
func runFiles(m *results.Manifest) func(slash string, dir bool) bool {
	top := map[string]bool{"manifest.json": true, "pipeline.hcl": true, "pipeline.star": true,
		results.PartsDir: true, "logs": true, "reproduction.md": true, "reproduction.json": true}
	for _, t := range []string{results.TableTrials, results.TableLatency, results.TableTimeseries, results.TableProcesses,
		results.TableSystem, results.TableNetwork, results.TableProbes, results.TableAgents, results.TableClaims} {
		top[results.TableFile(t, results.FormatParquet)] = true
		top[results.TableFile(t, results.FormatArrow)] = true
	}
	sources := map[string]bool{}
	if m != nil {
		for _, f := range m.Pipeline.Files {
			p := path.Clean("sources/" + f.Path)
			sources[p] = true
			for d := path.Dir(p); d != "sources" && d != "."; d = path.Dir(d) {
				sources[d] = true
			}
		}
	}
	return func(slash string, dir bool) bool {
		first, _, nested := strings.Cut(slash, "/")
		switch {
		case first == "sources" && !nested:
			return dir
		case first == "sources":
			return sources[slash]
		case nested:
			return true // inside parts/ or logs/
		}
		return top[slash]
	}
}

func copyFile(src, dst string) error {
	in, err := openRegular(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// writeGenerated writes variables.json, report.md, report.html and
// REPRODUCE.md from the staged copy (so the report is what a reader of
// the bundle gets from `benchflow report`).
func writeGenerated(stage, name string, m *results.Manifest, opts Options, key *SigningKey, dropped []string) error {
	vars := m.Pipeline.Variables
	if vars == nil {
		vars = map[string]any{}
	}
	b, err := json.MarshalIndent(vars, "", "  ")
	if err != nil {
		return fmt.Errorf("publishing: encoding the variables: %w", err)
	}
	if err := os.WriteFile(filepath.Join(stage, VariablesFile), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("publishing: %w", err)
	}
	run, err := results.ReadRun(stage)
	if err != nil {
		return fmt.Errorf("publishing: reading the bundle back: %w", err)
	}
	s, err := report.Summarize(run, opts.Report)
	if err != nil {
		return fmt.Errorf("publishing: %w", err)
	}
	var md bytes.Buffer
	if err := s.Write(&md, "markdown"); err != nil {
		return fmt.Errorf("publishing: %w", err)
	}
	if err := os.WriteFile(filepath.Join(stage, MarkdownFile), md.Bytes(), 0o644); err != nil {
		return fmt.Errorf("publishing: %w", err)
	}
	cmds := Commands(name, m)
	load := MachineLoad(run)
	var page bytes.Buffer
	if err := report.WritePage(&page, s, report.Page{
		Claims:      pageClaims(s.Claims),
		Environment: append(results.EnvironmentRows(m), [2]string{"machine load", load.String()}),
		Commands:    cmds,
	}); err != nil {
		return fmt.Errorf("publishing: %w", err)
	}
	if err := os.WriteFile(filepath.Join(stage, HTMLFile), page.Bytes(), 0o644); err != nil {
		return fmt.Errorf("publishing: %w", err)
	}
	files, err := listFiles(stage)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(stage, ReproduceFile), []byte(reproduceMD(name, m, load, files, key, dropped)), 0o644); err != nil {
		return fmt.Errorf("publishing: %w", err)
	}
	return nil
}

// listFiles lists every regular file under dir but SHA256SUMS and
// SigFile, with its size and sha256, sorted by path.
func listFiles(dir string) ([]File, error) {
	var files []File
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if rel == SumsFile || rel == SigFile {
			return nil
		}
		sum, n, err := hashFile(p)
		if err != nil {
			return err
		}
		files = append(files, File{Path: rel, Bytes: n, SHA256: sum})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("publishing: %w", err)
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	return files, nil
}

// writeSums writes SHA256SUMS in the format of sha256sum(1): "<hex>  <path>".
func writeSums(dir string, files []File) error {
	var b strings.Builder
	for _, f := range files {
		fmt.Fprintf(&b, "%s  %s\n", f.SHA256, f.Path)
	}
	if err := os.WriteFile(filepath.Join(dir, SumsFile), []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("publishing: %w", err)
	}
	return nil
}

// WriteArchive writes dir as a gzip-compressed tar archive to file (the
// folder's base name as its top folder), through a temporary file.
func WriteArchive(dir, file string) (err error) {
	tmp, rec, err := scratch.Machine().CreateTemp(filepath.Dir(file), "."+filepath.Base(file)+".tmp-")
	if err != nil {
		return fmt.Errorf("writing the archive: %w", err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
		rec.Done()
	}()
	zw := gzip.NewWriter(tmp)
	tw := tar.NewWriter(zw)
	top := filepath.Base(filepath.Clean(dir))
	// Fixed times and owners: the same bundle gives the same archive.
	epoch := time.Unix(0, 0).UTC()
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		name := path.Join(top, filepath.ToSlash(rel))
		switch {
		case d.IsDir():
			return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: 0o755, ModTime: epoch, Format: tar.FormatPAX})
		case d.Type().IsRegular():
			fi, err := d.Info()
			if err != nil {
				return err
			}
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: fi.Size(), ModTime: epoch, Format: tar.FormatPAX}); err != nil {
				return err
			}
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = io.Copy(tw, f)
			return err
		}
		return nil
	})
	if err == nil {
		err = tw.Close()
	}
	if err == nil {
		err = zw.Close()
	}
	if err == nil {
		err = tmp.Close()
	}
	if err == nil {
		err = os.Rename(tmp.Name(), file)
	}
	if err != nil {
		return fmt.Errorf("writing the archive %s: %w", file, err)
	}
	return nil
}

// pageClaims are the claims as the page's leading table shows them.
func pageClaims(outs []report.ClaimOutcome) []report.PageClaim {
	var out []report.PageClaim
	for _, o := range outs {
		what := claims.Subject(o.Kind, o.Metric, o.VersusMetric, o.Cell, o.Versus)
		st := strings.TrimSpace(o.Description + " (" + what + " " + o.Bound + ")")
		out = append(out, report.PageClaim{Name: o.Name, Statement: st, Outcome: o.Outcome, Detail: o.Detail})
	}
	return out
}

// TempDir makes a private temporary folder (in $TMPDIR, named prefix and
// digits) recorded before it is made, so gc removes it when the process
// that made it was killed; done removes it and forgets the record.
func TempDir(prefix string) (dir string, done func(), err error) {
	dir, rec, err := scratch.Machine().MkdirTemp("", prefix, 0o700)
	if err != nil {
		return "", nil, err
	}
	return dir, func() {
		os.RemoveAll(dir)
		rec.Done()
	}, nil
}

// WriteRunFile writes name into the run folder dir atomically, through a
// temporary file recorded in the run's journal.
func WriteRunFile(dir, name string, data []byte) error {
	return scratch.Run(dir).WriteFile(filepath.Join(dir, name), 0o644, func(f *os.File) error {
		_, err := f.Write(data)
		return err
	})
}
