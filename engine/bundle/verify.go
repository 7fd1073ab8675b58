package bundle

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/benchflow/benchflow/engine/userfile"
)

// ErrNotBundle is wrapped by Verify's error when dir has no SHA256SUMS.
var ErrNotBundle = errors.New("not a bundle")

// ErrChecksum is wrapped by Verify's errors about a file that differs
// from SHA256SUMS, is missing, or is not listed there.
var ErrChecksum = errors.New("checksum mismatch")

// Problem is one file that does not match SHA256SUMS.
type Problem struct {
	Path string // slash-separated, relative to the bundle
	// What is "changed" (the sha256 differs), "missing", "not listed" or
	// (SigFile) "not a regular file".
	What string
}

// VerifyError lists every file that does not match; it wraps ErrChecksum.
type VerifyError struct {
	Dir      string
	Problems []Problem
}

func (e *VerifyError) Error() string {
	var parts []string
	for _, p := range e.Problems {
		parts = append(parts, p.Path+" "+p.What)
	}
	return fmt.Sprintf("bundle %s does not match its %s: %s", e.Dir, SumsFile, strings.Join(parts, "; "))
}

func (e *VerifyError) Unwrap() error { return ErrChecksum }

// Verify checks every file of the bundle dir against its SHA256SUMS (as
// `sha256sum -c` does) and also reports files that are not listed but
// SHA256SUMS and its signature SigFile (a regular file only). It
// returns the number of files checked; the error is a *VerifyError, or
// wraps ErrNotBundle, or says why SHA256SUMS cannot be read.
func Verify(dir string) (int, error) {
	sums, err := readSums(dir)
	if err != nil {
		return 0, err
	}
	ve := &VerifyError{Dir: dir}
	listed := map[string]bool{}
	paths := make([]string, 0, len(sums))
	for p := range sums {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		listed[p] = true
		got, _, err := hashFile(filepath.Join(dir, filepath.FromSlash(p)))
		kind := notRegular(filepath.Join(dir, filepath.FromSlash(p)), err)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			ve.Problems = append(ve.Problems, Problem{p, "missing"})
		case kind != "":
			ve.Problems = append(ve.Problems, Problem{p, "is " + kind + ", not a regular file"})
		case err != nil:
			return 0, fmt.Errorf("verifying %s: %w", dir, err)
		case got != sums[p]:
			ve.Problems = append(ve.Problems, Problem{p, "changed"})
		}
	}
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		switch {
		case rel == SumsFile || listed[rel]:
		case rel == SigFile && d.Type().IsRegular():
			// The signature of SHA256SUMS cannot be listed in it;
			// CheckSignature verifies it.
		case rel == SigFile:
			ve.Problems = append(ve.Problems, Problem{rel, "not a regular file"})
		default:
			ve.Problems = append(ve.Problems, Problem{rel, "not listed"})
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("verifying %s: %w", dir, err)
	}
	if len(ve.Problems) > 0 {
		return len(sums), ve
	}
	return len(sums), nil
}

// IsBundle reports whether dir has a SHA256SUMS file.
func IsBundle(dir string) bool {
	fi, err := os.Stat(filepath.Join(dir, SumsFile))
	return err == nil && fi.Mode().IsRegular()
}

// readSums parses SHA256SUMS: lines "<64 hex>  <path>" (or " *<path>",
// sha256sum's binary mark).
func readSums(dir string) (map[string]string, error) {
	b, err := readBundleFile(dir, SumsFile, userfile.MaxSize)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("verifying %s: %w (no %s)", dir, ErrNotBundle, SumsFile)
	}
	if err != nil {
		return nil, fmt.Errorf("verifying %s: %w", dir, err)
	}
	sums := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.TrimSpace(line) == "" {
			continue
		}
		sum, name, ok := strings.Cut(line, " ")
		name = strings.TrimPrefix(strings.TrimPrefix(name, " "), "*")
		if _, err := hex.DecodeString(sum); !ok || err != nil || len(sum) != 64 || name == "" || !fs.ValidPath(name) {
			return nil, fmt.Errorf("verifying %s: %s:%d: not a line of sha256sum (want \"<sha256>  <path>\"): %q", dir, SumsFile, n, line)
		}
		sums[name] = strings.ToLower(sum)
	}
	return sums, nil
}

// openRegular opens p, a file of the bundle, for reading only if it is
// a regular file itself (engine/userfile's no-follow rule, any size): a
// symlink, a FIFO, a device or a folder is refused without being opened.
func openRegular(p string) (*os.File, error) { return userfile.OpenNoFollow(p, 0) }

// notRegular says what p is when err refused it for not being a regular
// file ("a FIFO", "a symbolic link", …), else "".
func notRegular(p string, err error) string {
	if !errors.Is(err, userfile.ErrNotRegular) {
		return ""
	}
	if fi, lerr := os.Lstat(p); lerr == nil {
		return userfile.Kind(fi.Mode())
	}
	return "something else"
}

func hashFile(p string) (sum string, n int64, err error) {
	f, err := openRegular(p)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err = io.Copy(h, f)
	if err != nil {
		return "", 0, err
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}
