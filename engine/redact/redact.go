// Package redact keeps sensitive values out of everything benchflow
// prints or records: plan output, errors, manifest.json, the trials
// table, logs and summaries.
//
// A Set holds the values of the pipeline's sensitive variables (and the
// forms they take once escaped in a URL or a JSON string); String and
// Writer replace each occurrence with "(sensitive)". Both also replace the
// user-info of URLs (http://user:password@host → http://(sensitive)@host),
// sensitive or not, since it usually is a credential.
//
// Default is the set the command line and the executor share: the CLI
// wraps its stdout and stderr with it, engine/run adds a plan's sensitive
// values to it and redacts every trial record before it is written.
package redact

import (
	"encoding/json"
	"io"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"sync"
)

// Mark replaces a sensitive value.
const Mark = "(sensitive)"

// MinLength is the shortest value a Set redacts: shorter ones (a sensitive
// "1") would match all over the output and hide nothing.
const MinLength = 4

// Set is a set of sensitive values. The zero value is empty and ready;
// it is safe for concurrent use.
type Set struct {
	mu   sync.RWMutex
	vals map[string]bool
	rep  *strings.Replacer
}

// Default is the process-wide set.
var Default = &Set{}

// Add registers values (and their URL- and JSON-escaped forms).
func (s *Set) Add(values ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.vals == nil {
		s.vals = map[string]bool{}
	}
	changed := false
	for _, v := range values {
		if len(v) < MinLength {
			continue
		}
		forms := []string{v, url.QueryEscape(v), url.PathEscape(v), url.UserPassword("", v).String()[1:]}
		if b, err := json.Marshal(v); err == nil {
			forms = append(forms, string(b[1:len(b)-1]))
		}
		for _, f := range forms {
			if len(f) >= MinLength && !s.vals[f] {
				s.vals[f] = true
				changed = true
			}
		}
	}
	if !changed {
		return
	}
	all := make([]string, 0, len(s.vals))
	for v := range s.vals {
		all = append(all, v)
	}
	// Longest first: a value that contains another is replaced whole.
	sort.Slice(all, func(i, j int) bool {
		if len(all[i]) != len(all[j]) {
			return len(all[i]) > len(all[j])
		}
		return all[i] < all[j]
	})
	pairs := make([]string, 0, 2*len(all))
	for _, v := range all {
		pairs = append(pairs, v, Mark)
	}
	s.rep = strings.NewReplacer(pairs...)
}

// Len is the number of values (escaped forms included) the set redacts.
func (s *Set) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.vals)
}

var userinfoRe = regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.-]*://)[^/?#@\s"'<>]+@`)

// URL removes the user-info of every URL in text.
func URL(text string) string {
	if !strings.Contains(text, "@") {
		return text
	}
	return userinfoRe.ReplaceAllString(text, "${1}"+Mark+"@")
}

// String returns text with every sensitive value and URL user-info
// replaced by Mark.
func (s *Set) String(text string) string {
	s.mu.RLock()
	rep := s.rep
	s.mu.RUnlock()
	if rep != nil {
		text = rep.Replace(text)
	}
	return URL(text)
}

// Writer returns a writer that redacts what it passes to w. Each Write is
// redacted on its own: callers write whole lines or messages.
func (s *Set) Writer(w io.Writer) io.Writer { return &writer{s: s, w: w} }

type writer struct {
	s *Set
	w io.Writer
}

func (w *writer) Write(p []byte) (int, error) {
	out := w.s.String(string(p))
	if _, err := io.WriteString(w.w, out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Fd lets callers that check for a terminal see the wrapped file.
func (w *writer) Fd() uintptr {
	if f, ok := w.w.(interface{ Fd() uintptr }); ok {
		return f.Fd()
	}
	return ^uintptr(0)
}
