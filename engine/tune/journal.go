package tune

import (
	"github.com/benchflow/benchflow/engine/procfs"

	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// The journal records, before a sysctl is changed, its path and original
// value in a file of the state folder (one file per benchflow process,
// named by its pid), and forgets it once the value is restored. A run
// killed with SIGKILL cannot restore anything: RestoreJournals (called by
// `benchflow gc` and before every apply) puts back the values recorded by
// processes that no longer run, then removes their files.
//
// The state folder is $BENCHFLOW_STATE_DIR, else /var/lib/benchflow for
// root, else $XDG_STATE_HOME/benchflow (~/.local/state/benchflow).

// StateDir is the folder benchflow keeps machine state in.
func StateDir() string {
	if d := os.Getenv("BENCHFLOW_STATE_DIR"); d != "" {
		return d
	}
	if os.Geteuid() == 0 {
		return "/var/lib/benchflow"
	}
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "benchflow")
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".local", "state", "benchflow")
	}
	return filepath.Join(os.TempDir(), "benchflow-state")
}

func journalDir() string { return filepath.Join(StateDir(), "tune-journal") }

// journalFile is one process's journal.
type journalFile struct {
	Owner map[string]string `json:"owner"`
	// NetNS is the network namespace of the process ("net:[4026531840]"):
	// net.* sysctls belong to it, and only a gc in it may restore them.
	NetNS   string         `json:"netns,omitempty"`
	Sysctls []journalEntry `json:"sysctls"`
}

func netNS() string {
	ns, _ := procfs.Namespace(procfs.Self, "net")
	return ns
}

type journalEntry struct {
	Path     string `json:"path"`     // /proc/sys/...
	Original string `json:"original"` // the value before the first change
}

var journalMu sync.Mutex

func ownJournal() string {
	return filepath.Join(journalDir(), strconv.Itoa(os.Getpid())+".json")
}

func readJournal(p string) (journalFile, error) {
	var j journalFile
	b, err := os.ReadFile(p)
	if err != nil {
		return j, err
	}
	if err := json.Unmarshal(b, &j); err != nil {
		return j, fmt.Errorf("%s: %w", p, err)
	}
	return j, nil
}

// writeJournal replaces p atomically (a temporary file, fsync, rename);
// an empty journal removes the file.
func writeJournal(p string, j journalFile) error {
	if len(j.Sysctls) == 0 {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	b, err := json.MarshalIndent(j, "", "  ")
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(p), ".journal-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(append(b, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, p)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	if d, err := os.Open(filepath.Dir(p)); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// journalChange records path's original value before it is changed. A
// path already recorded keeps its first (true) original. A path another
// process's journal holds is refused (ErrTunedElsewhere): the check and the
// record are one step under a lock of the journal folder, so of two runs
// tuning the same sysctl only the first changes it. owner and alive are
// Settings' Owner and Alive.
func journalChange(path, original string, owner map[string]string, alive func(map[string]string) bool) error {
	journalMu.Lock()
	defer journalMu.Unlock()
	unlock, err := lockJournals()
	if err != nil {
		return fmt.Errorf("journaling the original value: %w", err)
	}
	defer unlock()
	if err := tunedElsewhere(path, alive); err != nil {
		return err
	}
	p := ownJournal()
	j, err := readJournal(p)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("journaling the original value: %w", err)
	}
	for _, e := range j.Sysctls {
		if e.Path == path {
			return nil
		}
	}
	if owner != nil {
		j.Owner = owner
	} else {
		j.Owner = map[string]string{"dev.benchflow.pid": strconv.Itoa(os.Getpid())}
	}
	j.NetNS = netNS()
	j.Sysctls = append(j.Sysctls, journalEntry{Path: path, Original: original})
	if err := writeJournal(p, j); err != nil {
		return fmt.Errorf("journaling the original value in %s: %w", journalDir(), err)
	}
	return nil
}

// journalRestored forgets path once its original value is back.
func journalRestored(path string) error {
	journalMu.Lock()
	defer journalMu.Unlock()
	p := ownJournal()
	j, err := readJournal(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	out := j.Sysctls[:0]
	for _, e := range j.Sysctls {
		if e.Path != path {
			out = append(out, e)
		}
	}
	j.Sysctls = out
	return writeJournal(p, j)
}

// RestoreJournals restores the sysctls recorded by benchflow processes
// that no longer run (alive tells, from a journal's owner labels, whether
// its process still runs) and removes their journals. It returns what it
// restored ("net.core.somaxconn = 4096 → 128") and the failures joined;
// a journal whose restore failed is kept for the next attempt.
func RestoreJournals(alive func(owner map[string]string) bool) ([]string, error) {
	dir := journalDir()
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var done []string
	var errs []error
	for _, f := range files {
		j, err := readJournal(f)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if filepath.Base(f) == filepath.Base(ownJournal()) || (alive != nil && alive(j.Owner)) {
			continue
		}
		var left []journalEntry
		otherNS := j.NetNS != "" && j.NetNS != netNS()
		for i := len(j.Sysctls) - 1; i >= 0; i-- {
			e := j.Sysctls[i]
			if otherNS && strings.HasPrefix(filepath.Clean(e.Path), filepath.Join(procfs.Root, "sys", "net")+"/") {
				// Another network namespace's value: left for a gc there.
				left = append([]journalEntry{e}, left...)
				continue
			}
			if !strings.HasPrefix(filepath.Clean(e.Path), filepath.Join(procfs.Root, "sys")+"/") {
				errs = append(errs, fmt.Errorf("%s: %q is not a sysctl path; ignored", f, e.Path))
				continue
			}
			cur, _ := os.ReadFile(e.Path)
			if err := writeSysctl(e.Path, e.Original); err != nil {
				errs = append(errs, fmt.Errorf("restoring %s to %q: %w", e.Path, e.Original, err))
				left = append([]journalEntry{e}, left...)
				continue
			}
			key := strings.ReplaceAll(strings.TrimPrefix(e.Path, filepath.Join(procfs.Root, "sys")+"/"), "/", ".")
			done = append(done, fmt.Sprintf("sysctl %s = %s (was %s)", key, e.Original, normalize(string(cur))))
		}
		j.Sysctls = left
		if err := writeJournal(f, j); err != nil {
			errs = append(errs, err)
		}
	}
	return done, errors.Join(errs...)
}
