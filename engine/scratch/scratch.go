// Package scratch is benchflow's one rule for the paths it makes only to
// remove or rename them: staging folders, temporary files written then
// renamed into place, temporary links and folders. benchflow deletes only
// what it recorded creating, and never through a symlink:
//
//   - Before a scratch path is made, a line naming it (its path, its kind,
//     the process making it) is appended to a journal and fsynced; after
//     it is made, a second line records its inode; once it has been renamed
//     into place or removed, a third line closes it. A journal with no open
//     entry left is removed.
//   - A run folder's scratch paths are recorded in the run folder itself
//     (Run: RUN/.benchflow-journal, paths relative to RUN), so a run carried
//     elsewhere is cleaned with it; the others (a publish's staging folder
//     beside its bundle, reproduce's temporary folder, the results folder's
//     temporary latest link, temporary files beside a file a command
//     writes) in the state folder (Machine: $BENCHFLOW_STATE_DIR/
//     scratch.journal, absolute paths, their folder resolved through
//     symlinks when recorded).
//   - Clean removes the open entries of processes that are gone, and only
//     those: it opens every component of an entry's path without following
//     a symlink (openat with O_NOFOLLOW, component by component), and an
//     entry that is not exactly what its record says — a symlink anywhere
//     on the way or at the end, another kind of file, another inode, a name
//     benchflow does not make, nothing there at all — is left alone and
//     reported (Left) with the reason. A folder it removes is removed
//     through the same descriptors: a symlink inside it is unlinked, never
//     followed.
//
// Everything else — the user's files, whatever their names, and anything
// an unrecorded or killed-before-recording write left — stays.
package scratch

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/benchflow/benchflow/engine/tune"
	"github.com/benchflow/benchflow/providers"
)

// RunJournalFile is the journal of a run folder's scratch paths.
const RunJournalFile = ".benchflow-journal"

// MachineJournalFile is the journal of the scratch paths outside run
// folders, in the state folder.
const MachineJournalFile = "scratch.journal"

// maxJournalBytes bounds a journal Clean reads (a journal holds only the
// entries of writes in progress or killed).
const maxJournalBytes = 16 << 20

// Kind is what a recorded path is.
type Kind string

// The kinds of scratch paths.
const (
	Dir  Kind = "dir"
	File Kind = "file"
	Link Kind = "symlink"
)

// line is one line of a journal (JSON).
type line struct {
	// Op: "make" (before the path is made, fsynced), "made" (after, with
	// its inode), "done" (renamed into place or removed).
	Op   string `json:"op"`
	Kind Kind   `json:"kind,omitempty"`
	// Path is slash-separated, relative to the journal's root (Run) or
	// absolute (Machine).
	Path string `json:"path"`
	// Restore (a folder moved aside: a trial's earlier part) is where it is
	// put back, in the same folder, when nothing is there.
	Restore string `json:"restore,omitempty"`
	// Ino and Born (birth time, ns, where the file system keeps one)
	// identify the file made: an inode number is soon reused.
	Ino  uint64 `json:"ino,omitempty"`
	Born int64  `json:"born,omitempty"`
	// Owner is the process making it (providers' owner labels).
	Owner map[string]string `json:"owner,omitempty"`
}

// Journal records the scratch paths made below one root.
type Journal struct {
	dir  string // folder of the journal file
	name string // the journal file
	root string // paths are relative to it; "" for absolute paths
	// bestEffort: a path that cannot be recorded (no writable state
	// folder) is made unrecorded, and then never removed by a cleanup.
	bestEffort bool
	// kept: a journal with nothing open is emptied, not removed (Tidy
	// removes it), so a writer's next record need not make it again.
	kept bool
}

// Kept is j for a writer that records often (a run's commits): a journal
// with nothing open is emptied rather than removed; the writer calls Tidy
// when it is done with the folder.
func (j *Journal) Kept() *Journal {
	k := *j
	k.kept = true
	return &k
}

// Tidy removes the journal when nothing in it is open.
func (j *Journal) Tidy() {
	f, dirfd, _, err := j.openJournal(false)
	if err != nil {
		return
	}
	defer unix.Close(dirfd)
	defer f.Close()
	if ents, _, err := readLines(f); err == nil && len(openEntries(ents)) == 0 {
		_ = unix.Unlinkat(dirfd, j.name, 0)
	}
}

// Run is the journal of the run folder dir.
func Run(dir string) *Journal {
	return &Journal{dir: dir, name: RunJournalFile, root: dir}
}

// Machine is the journal of scratch paths outside run folders.
func Machine() *Journal {
	return &Journal{dir: tune.StateDir(), name: MachineJournalFile, bestEffort: true}
}

// Path is the journal file.
func (j *Journal) Path() string { return filepath.Join(j.dir, j.name) }

// Record is one recorded scratch path; Done closes it.
type Record struct {
	j    *Journal
	rel  string
	path string
	done bool // closed, or never recorded (bestEffort)
}

// Path is the recorded path as the caller named it.
func (r *Record) Path() string {
	if r == nil {
		return ""
	}
	return r.path
}

// Done records that the path was renamed into place or removed (or was
// never made). It is safe to call on nil and twice.
func (r *Record) Done() {
	if r == nil || r.done {
		return
	}
	r.done = true
	_ = r.j.appendLine(line{Op: "done", Path: r.rel}, false)
}

// made records the identity of the path just made.
func (r *Record) made() {
	if r.done {
		return
	}
	if id, ok := identify(unix.AT_FDCWD, r.path); ok {
		_ = r.j.appendLine(line{Op: "made", Path: r.rel, Ino: id.ino, Born: id.born}, false)
	}
}

// rel is the path as the journal records it.
func (j *Journal) rel(path string) (string, error) {
	if j.root == "" {
		parent, err := filepath.EvalSymlinks(filepath.Dir(path))
		if err != nil {
			return "", err
		}
		abs, err := filepath.Abs(filepath.Join(parent, filepath.Base(path)))
		if err != nil {
			return "", err
		}
		return filepath.ToSlash(abs), nil
	}
	rel, err := filepath.Rel(j.root, path)
	if err != nil || !filepath.IsLocal(rel) {
		return "", fmt.Errorf("%s is not inside %s", path, j.root)
	}
	return filepath.ToSlash(rel), nil
}

// Expect records path (a scratch path of kind the caller is about to make
// itself) before it is made. restore, for a folder moved aside, is where
// Clean puts it back when nothing is there (a path in the same folder).
func (j *Journal) Expect(path string, kind Kind, restore string) (*Record, error) {
	return j.expect(providers.SelfOwner().Labels(), path, kind, restore)
}

func (j *Journal) expect(owner map[string]string, path string, kind Kind, restore string) (*Record, error) {
	rel, err := j.rel(path)
	if err != nil {
		return nil, fmt.Errorf("recording %s: %w", path, err)
	}
	if !scratchName.MatchString(filepath.Base(path)) {
		return nil, fmt.Errorf("recording %s: not a scratch name", path)
	}
	l := line{Op: "make", Kind: kind, Path: rel, Owner: owner}
	if restore != "" {
		rr, err := j.rel(restore)
		if err != nil || pathDir(rr) != pathDir(rel) {
			return nil, fmt.Errorf("recording %s: %s is not beside it", path, restore)
		}
		l.Restore = rr
		if id, ok := identify(unix.AT_FDCWD, restore); ok {
			l.Ino, l.Born = id.ino, id.born
		}
	}
	if err := j.appendLine(l, true); err != nil {
		if j.bestEffort {
			return &Record{j: j, rel: rel, path: path, done: true}, nil
		}
		return nil, fmt.Errorf("recording %s in %s: %w", path, j.Path(), err)
	}
	return &Record{j: j, rel: rel, path: path}, nil
}

// Made records the identity (inode, birth time) of the path r names, now
// made.
func (r *Record) Made() { r.made() }

// tempName is prefix, decimal digits and suffix.
func tempName(prefix, suffix string) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return prefix + strconv.FormatUint(uint64(binary.LittleEndian.Uint32(b[:])), 10) + suffix
}

// MkdirTemp makes a new folder in dir named prefix and decimal digits
// (as os.MkdirTemp), recorded in j before it is made. Done once the folder
// is renamed or removed.
func (j *Journal) MkdirTemp(dir, prefix string, perm os.FileMode) (string, *Record, error) {
	if dir == "" {
		dir = os.TempDir()
	}
	for range 100 {
		p := filepath.Join(dir, tempName(prefix, ""))
		if _, err := os.Lstat(p); err == nil {
			continue
		}
		r, err := j.Expect(p, Dir, "")
		if err != nil {
			return "", nil, err
		}
		if err := os.Mkdir(p, perm); err != nil {
			r.Done()
			if errors.Is(err, os.ErrExist) {
				continue
			}
			return "", nil, err
		}
		r.made()
		return p, r, nil
	}
	return "", nil, fmt.Errorf("making a folder in %s: no free name", dir)
}

// CreateTemp creates a new file in dir named prefix and decimal digits
// (as os.CreateTemp, mode 0600), recorded in j before it is made. Done
// once the file is renamed or removed.
func (j *Journal) CreateTemp(dir, prefix string) (*os.File, *Record, error) {
	return j.createTemp(dir, prefix, 0o600)
}

// WriteFile writes path atomically: through a temporary file beside it
// ("." name ".tmp-" digits, mode perm less the umask) recorded in j
// first, fsynced, renamed into place, its folder fsynced. A failed write
// leaves path as it was and removes the temporary file.
func (j *Journal) WriteFile(path string, perm os.FileMode, write func(f *os.File) error) (err error) {
	f, rec, err := j.createTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-", perm)
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
		rec.Done()
	}()
	if err = write(f); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

func (j *Journal) createTemp(dir, prefix string, perm os.FileMode) (*os.File, *Record, error) {
	for range 100 {
		p := filepath.Join(dir, tempName(prefix, ""))
		if _, err := os.Lstat(p); err == nil {
			continue
		}
		r, err := j.Expect(p, File, "")
		if err != nil {
			return nil, nil, err
		}
		f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, perm)
		if err != nil {
			r.Done()
			if errors.Is(err, os.ErrExist) {
				continue
			}
			return nil, nil, err
		}
		r.made()
		return f, r, nil
	}
	return nil, nil, fmt.Errorf("creating a file in %s: no free name", dir)
}

// scratchName is every name the journal records: a dot or "benchflow-",
// anything, decimal digits (and "-old" for a folder moved aside), or the
// results folder's temporary latest link.
var scratchName = regexp.MustCompile(`^((\.|benchflow-).*[0-9]+(-old)?|\.latest\.tmp-.+)$`)

func pathDir(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i]
	}
	return ""
}

// id is what tells one file from another that took its name.
type id struct {
	ino  uint64
	born int64 // 0 when the file system keeps no birth time
}

// identify is the id of name in dirfd, not following a symlink.
func identify(dirfd int, name string) (id, bool) {
	var sx unix.Statx_t
	if err := unix.Statx(dirfd, name, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_INO|unix.STATX_BTIME, &sx); err != nil {
		return id{}, false
	}
	i := id{ino: sx.Ino}
	if sx.Mask&unix.STATX_BTIME != 0 {
		i.born = sx.Btime.Sec*1e9 + int64(sx.Btime.Nsec)
	}
	return i, true
}

// openJournal opens (creating with create) the journal file without
// following a symlink, locked (flock) for this process: a Clean or another
// writer waits. created says it was made now.
func (j *Journal) openJournal(create bool) (f *os.File, dirfd int, created bool, err error) {
	if j.root == "" && create {
		if err := os.MkdirAll(j.dir, 0o700); err != nil {
			return nil, -1, false, err
		}
	}
	dirfd, err = unix.Open(j.dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, -1, false, &os.PathError{Op: "open", Path: j.dir, Err: err}
	}
	for range 10 {
		flags := unix.O_RDWR | unix.O_APPEND | unix.O_NOFOLLOW | unix.O_CLOEXEC
		fd, err := unix.Openat(dirfd, j.name, flags, 0)
		created = false
		if err == unix.ENOENT && create {
			fd, err = unix.Openat(dirfd, j.name, flags|unix.O_CREAT|unix.O_EXCL, 0o600)
			if err == unix.EEXIST {
				continue
			}
			created = err == nil
		}
		if err != nil {
			unix.Close(dirfd)
			if err == unix.ELOOP {
				err = errors.New("it is a symlink")
			}
			return nil, -1, false, &os.PathError{Op: "open", Path: j.Path(), Err: err}
		}
		if err := unix.Flock(fd, unix.LOCK_EX); err != nil {
			unix.Close(fd)
			unix.Close(dirfd)
			return nil, -1, false, &os.PathError{Op: "lock", Path: j.Path(), Err: err}
		}
		// A Clean may have removed the file between open and lock.
		var a, b unix.Stat_t
		if unix.Fstat(fd, &a) == nil && unix.Fstatat(dirfd, j.name, &b, unix.AT_SYMLINK_NOFOLLOW) == nil && a.Ino == b.Ino && a.Dev == b.Dev {
			if a.Mode&unix.S_IFMT != unix.S_IFREG {
				unix.Close(fd)
				unix.Close(dirfd)
				return nil, -1, false, &os.PathError{Op: "open", Path: j.Path(), Err: errors.New("not a regular file")}
			}
			return os.NewFile(uintptr(fd), j.Path()), dirfd, created, nil
		}
		unix.Close(fd)
		if !create {
			break
		}
	}
	unix.Close(dirfd)
	if !create {
		return nil, -1, false, &os.PathError{Op: "open", Path: j.Path(), Err: os.ErrNotExist}
	}
	return nil, -1, false, &os.PathError{Op: "open", Path: j.Path(), Err: errors.New("it keeps being replaced")}
}

// appendLine appends l to the journal; with sync it is on disk when
// appendLine returns. A "done" line that leaves no open entry removes the
// journal.
func (j *Journal) appendLine(l line, sync bool) error {
	b, err := json.Marshal(l)
	if err != nil {
		return err
	}
	f, dirfd, created, err := j.openJournal(l.Op == "make")
	if err != nil {
		if l.Op != "make" && errors.Is(err, os.ErrNotExist) {
			return nil // a Clean found nothing open: nothing to close
		}
		return err
	}
	defer unix.Close(dirfd)
	defer f.Close()
	if _, err := f.Write(append(b, '\n')); err != nil {
		return err
	}
	if sync {
		if err := f.Sync(); err != nil {
			return err
		}
		if created {
			if err := unix.Fsync(dirfd); err != nil {
				return err
			}
		}
	}
	if l.Op == "done" {
		if ents, _, err := readLines(f); err == nil && len(openEntries(ents)) == 0 {
			if j.kept {
				_ = f.Truncate(0)
			} else {
				_ = unix.Unlinkat(dirfd, j.name, 0)
			}
		}
	}
	return nil
}

// readLines reads the journal from its start; bad counts unreadable lines.
func readLines(f *os.File) ([]line, int, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	if fi.Size() > maxJournalBytes {
		return nil, 0, fmt.Errorf("%s is larger than %d MiB", f.Name(), maxJournalBytes>>20)
	}
	b := make([]byte, fi.Size())
	n, err := f.ReadAt(b, 0)
	if err != nil && err != io.EOF {
		return nil, 0, err
	}
	var out []line
	bad := 0
	sc := bufio.NewScanner(bytes.NewReader(b[:n]))
	sc.Buffer(nil, maxJournalBytes)
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var l line
		if json.Unmarshal(sc.Bytes(), &l) != nil || l.Path == "" {
			bad++
			continue
		}
		out = append(out, l)
	}
	return out, bad, nil
}

// entry is an open record: made, not done.
type entry struct {
	line      // the "make" line
	made bool // a "made" line followed, its inode in Ino
}

// openEntries folds the lines into the open entries, in journal order.
func openEntries(lines []line) []*entry {
	var order []*entry
	open := map[string]*entry{}
	for _, l := range lines {
		switch l.Op {
		case "make":
			e := &entry{line: l}
			open[l.Path] = e
			order = append(order, e)
		case "made":
			if e := open[l.Path]; e != nil && e.Restore == "" {
				e.Ino, e.Born, e.made = l.Ino, l.Born, true
			}
		case "done":
			delete(open, l.Path)
		}
	}
	out := order[:0]
	for _, e := range order {
		if open[e.Path] == e {
			out = append(out, e)
		}
	}
	return out
}

// Left is a recorded path Clean left alone, and why.
type Left struct {
	Path string
	Why  string
}

// String is the warning commands print: "left alone PATH: WHY".
func (l Left) String() string { return "left alone " + l.Path + ": " + l.Why }

// Report is what Clean did.
type Report struct {
	Removed  []string // scratch paths removed
	Restored []string // folders moved aside, put back (the path they were put back at)
	Left     []Left   // recorded paths not exactly as recorded: left alone
}

// Clean removes the open entries of processes that no longer run,
// exactly as recorded (see the package comment), and forgets them; the
// entries of live processes (and of processes of other hosts, which
// nothing here can check) stay recorded.
func (j *Journal) Clean() (*Report, error) {
	rep := &Report{}
	f, dirfd, _, err := j.openJournal(false)
	if errors.Is(err, os.ErrNotExist) {
		return rep, nil
	}
	if err != nil {
		return rep, err
	}
	defer unix.Close(dirfd)
	defer f.Close()
	lines, bad, err := readLines(f)
	if err != nil {
		return rep, err
	}
	if bad > 0 {
		rep.Left = append(rep.Left, Left{Path: j.Path(), Why: fmt.Sprintf("%d line(s) of the journal cannot be read; what they name is left alone, and they are dropped", bad)})
	}
	var stay []*entry
	var errs []error
	for _, e := range openEntries(lines) {
		if o, ok := providers.OwnerFromLabels(e.Owner); ok && o.State() != providers.OwnerGone {
			stay = append(stay, e)
			continue
		}
		restored, why, err := j.remove(e)
		shown := j.show(e.Path)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("removing %s: %w", shown, err))
			stay = append(stay, e)
		case why != "":
			rep.Left = append(rep.Left, Left{Path: shown, Why: why})
		case restored:
			rep.Restored = append(rep.Restored, j.show(e.Restore))
		default:
			rep.Removed = append(rep.Removed, shown)
		}
	}
	// What stays recorded: the live processes' entries and the failures.
	if len(stay) == 0 {
		if err := unix.Unlinkat(dirfd, j.name, 0); err != nil {
			errs = append(errs, &os.PathError{Op: "remove", Path: j.Path(), Err: err})
		}
		return rep, errors.Join(errs...)
	}
	var buf bytes.Buffer
	for _, e := range stay {
		for _, l := range []line{e.line, {Op: "made", Path: e.Path, Ino: e.Ino, Born: e.Born}} {
			if l.Op == "made" && !e.made {
				continue
			}
			if l.Op == "make" && e.made {
				l.Ino, l.Born = 0, 0
			}
			b, _ := json.Marshal(l)
			buf.Write(append(b, '\n'))
		}
	}
	err = f.Truncate(0)
	if err == nil {
		_, err = f.Write(buf.Bytes())
	}
	if err == nil {
		err = f.Sync()
	}
	if err != nil {
		errs = append(errs, fmt.Errorf("rewriting %s: %w", j.Path(), err))
	}
	return rep, errors.Join(errs...)
}

// show is a recorded path as a report names it.
func (j *Journal) show(p string) string {
	if j.root == "" {
		return filepath.FromSlash(p)
	}
	return filepath.Join(j.root, filepath.FromSlash(p))
}

// remove removes (or puts back) one entry of a gone process, when it is
// exactly what the record says; otherwise why says what differs.
func (j *Journal) remove(e *entry) (restored bool, why string, err error) {
	p := e.Path
	base := j.root
	if j.root == "" {
		if !strings.HasPrefix(p, "/") {
			return false, "not an absolute path: not a record benchflow writes", nil
		}
		base, p = "/", p[1:]
	}
	comps := strings.Split(p, "/")
	for _, c := range comps {
		if c == "" || c == "." || c == ".." {
			return false, "not a path below " + base + ": not a record benchflow writes", nil
		}
	}
	name := comps[len(comps)-1]
	if !scratchName.MatchString(name) {
		return false, "not a name benchflow makes", nil
	}
	switch e.Kind {
	case Dir, File, Link:
	default:
		return false, fmt.Sprintf("recorded as %q, not a kind benchflow makes", e.Kind), nil
	}
	fd, err := unix.Open(base, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		if err == unix.ENOENT {
			return false, base + " is gone", nil
		}
		return false, "", &os.PathError{Op: "open", Path: base, Err: err}
	}
	defer func() { unix.Close(fd) }()
	at := base
	for _, c := range comps[:len(comps)-1] {
		next := filepath.Join(at, c)
		var st unix.Stat_t
		if err := unix.Fstatat(fd, c, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if err == unix.ENOENT {
				return false, next + " is gone: nothing to remove", nil
			}
			return false, "", &os.PathError{Op: "lstat", Path: next, Err: err}
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
		case unix.S_IFLNK:
			return false, next + " is a symlink (benchflow never deletes through one)", nil
		default:
			return false, next + " is not a folder", nil
		}
		nfd, err := unix.Openat(fd, c, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			if err == unix.ELOOP || err == unix.ENOTDIR {
				return false, next + " is a symlink (benchflow never deletes through one)", nil
			}
			return false, "", &os.PathError{Op: "open", Path: next, Err: err}
		}
		unix.Close(fd)
		fd, at = nfd, next
	}
	var st unix.Stat_t
	if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if err == unix.ENOENT {
			return false, "not there: nothing to remove", nil
		}
		return false, "", &os.PathError{Op: "lstat", Path: j.show(e.Path), Err: err}
	}
	is := kindOf(st.Mode)
	if is != e.Kind {
		return false, fmt.Sprintf("it is %s; benchflow recorded creating %s", article(is), article(e.Kind)), nil
	}
	got, _ := identify(fd, name)
	if e.Ino != 0 && (got.ino != e.Ino || e.Born != 0 && got.born != 0 && got.born != e.Born) {
		return false, fmt.Sprintf("it is not the %s benchflow made (another has taken its place)", kindWord(e.Kind)), nil
	}
	if e.Restore != "" {
		target := path.Base(e.Restore)
		var ts unix.Stat_t
		if err := unix.Fstatat(fd, target, &ts, unix.AT_SYMLINK_NOFOLLOW); err == unix.ENOENT {
			if err := unix.Renameat(fd, name, fd, target); err != nil {
				return false, "", &os.PathError{Op: "rename", Path: j.show(e.Path), Err: err}
			}
			return true, "", nil
		}
	}
	if e.Kind == Dir {
		why, err := removeAllAt(fd, name, st.Ino, j.show(e.Path))
		return false, why, err
	}
	if err := unix.Unlinkat(fd, name, 0); err != nil && err != unix.ENOENT {
		return false, "", &os.PathError{Op: "remove", Path: j.show(e.Path), Err: err}
	}
	return false, "", nil
}

// removeAllAt removes the folder name of parent (inode ino) and all it
// holds through descriptors, following no symlink.
func removeAllAt(parent int, name string, ino uint64, shown string) (string, error) {
	fd, err := unix.Openat(parent, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		if err == unix.ELOOP || err == unix.ENOTDIR {
			return "it was replaced while being removed: left alone", nil
		}
		return "", &os.PathError{Op: "open", Path: shown, Err: err}
	}
	d := os.NewFile(uintptr(fd), shown)
	defer d.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return "", &os.PathError{Op: "stat", Path: shown, Err: err}
	}
	if st.Ino != ino {
		return "it was replaced while being removed: left alone", nil
	}
	for {
		names, err := d.Readdirnames(256)
		for _, n := range names {
			var cs unix.Stat_t
			if err := unix.Fstatat(fd, n, &cs, unix.AT_SYMLINK_NOFOLLOW); err != nil {
				if err == unix.ENOENT {
					continue
				}
				return "", &os.PathError{Op: "lstat", Path: filepath.Join(shown, n), Err: err}
			}
			if cs.Mode&unix.S_IFMT == unix.S_IFDIR {
				if why, err := removeAllAt(fd, n, cs.Ino, filepath.Join(shown, n)); why != "" || err != nil {
					return why, err
				}
				continue
			}
			if err := unix.Unlinkat(fd, n, 0); err != nil && err != unix.ENOENT {
				return "", &os.PathError{Op: "remove", Path: filepath.Join(shown, n), Err: err}
			}
		}
		if err == io.EOF || len(names) == 0 {
			break
		}
		if err != nil {
			return "", &os.PathError{Op: "readdir", Path: shown, Err: err}
		}
	}
	if err := unix.Unlinkat(parent, name, unix.AT_REMOVEDIR); err != nil && err != unix.ENOENT {
		return "", &os.PathError{Op: "remove", Path: shown, Err: err}
	}
	return "", nil
}

func kindOf(mode uint32) Kind {
	switch mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return Dir
	case unix.S_IFREG:
		return File
	case unix.S_IFLNK:
		return Link
	}
	return "special"
}

func kindWord(k Kind) string {
	switch k {
	case Dir:
		return "folder"
	case File:
		return "file"
	case Link:
		return "symlink"
	}
	return "special file"
}

func article(k Kind) string {
	if k == "special" {
		return "a special file"
	}
	return "a " + kindWord(k)
}

// Holds records, before it happens, that the path r names is about to
// hold the file at path (a folder exchanged with another in one rename).
func (r *Record) Holds(path string) error {
	if r.done {
		return nil
	}
	i, ok := identify(unix.AT_FDCWD, path)
	if !ok {
		return fmt.Errorf("recording %s: %s is gone", r.path, path)
	}
	return r.j.appendLine(line{Op: "made", Path: r.rel, Ino: i.ino, Born: i.born}, true)
}

// RemoveTree removes the folder rel (a path below root, a folder benchflow
// made that is not scratch: a trial's part merged into the tables) and
// all it holds, opening every component without following a symlink: a
// symlink on the way or at rel is an error, and nothing is removed.
func RemoveTree(root, rel string) error {
	shown := filepath.Join(root, rel)
	comps := strings.Split(filepath.ToSlash(filepath.Clean(rel)), "/")
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: root, Err: err}
	}
	defer func() { unix.Close(fd) }()
	at := root
	for i, c := range comps {
		if c == "" || c == "." || c == ".." {
			return fmt.Errorf("removing %s: not a path below %s", shown, root)
		}
		at = filepath.Join(at, c)
		var st unix.Stat_t
		if err := unix.Fstatat(fd, c, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if err == unix.ENOENT {
				return nil
			}
			return &os.PathError{Op: "lstat", Path: at, Err: err}
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			if st.Mode&unix.S_IFMT == unix.S_IFLNK {
				return fmt.Errorf("removing %s: %s is a symlink (benchflow never deletes through one)", shown, at)
			}
			return fmt.Errorf("removing %s: %s is not a folder", shown, at)
		}
		if i == len(comps)-1 {
			why, err := removeAllAt(fd, c, st.Ino, shown)
			if why != "" {
				return fmt.Errorf("removing %s: %s", shown, why)
			}
			return err
		}
		nfd, err := unix.Openat(fd, c, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return &os.PathError{Op: "open", Path: at, Err: err}
		}
		unix.Close(fd)
		fd = nfd
	}
	return nil
}

// RecordFor records path in j as a scratch path of kind made by the
// process whose owner labels are owner (providers.Owner.Labels), with its
// inode when it exists: what a writer killed after making it leaves. It is
// for tests and tools that simulate or import another process's record.
// restore is as Expect's.
func (j *Journal) RecordFor(owner map[string]string, path string, kind Kind, restore string) error {
	r, err := j.expect(owner, path, kind, restore)
	if err != nil {
		return err
	}
	if i, ok := identify(unix.AT_FDCWD, path); ok && restore == "" {
		return j.appendLine(line{Op: "made", Path: r.rel, Ino: i.ino, Born: i.born}, true)
	}
	return nil
}
