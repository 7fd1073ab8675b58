package load

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Response checks (Options.Checks, `benchflow load --check`, a step's
// checks = [...]): a response that fails one is an error of class
// "check" — counted in Errors, never in Requests, its latency not
// recorded — as k6 users expect of checks that gate a test. The HTTP/1.1
// parser (response.go) runs them as it reads: the status and headers
// when the header block is complete, the body as it passes through the
// read buffer, searched in place (a body check copies no more than the
// text it looks for, to find it across two reads). Without checks the
// parser's only cost is a nil comparison per header block and per body
// read.
//
// HTTP/2 (h2.go) and HTTP/3 (h3raw.go) run the same checks with the same
// meaning: a stream takes a checkState when its final response's headers
// arrive; the body is each DATA frame's payload (padding excluded), read
// in place from the frame reader's buffer. The header fields are decoded
// in full (HPACK, QPACK) only when a header check asks for them; without
// one only :status is, as without checks.
//
//	status==200   status!=500   status<400     the status code (== != < <= > >=)
//	size==4096    size>0                       the body's length in bytes (decoded: without chunk framing or DATA frame headers)
//	body contains TEXT                         TEXT appears in the body
//	header NAME ~ REGEXP                       a NAME header's value matches REGEXP (Go syntax)

// MaxChecks bounds the checks of one load, and MaxCheckText the text a
// body check looks for.
const (
	MaxChecks    = 32
	MaxCheckText = 1024
)

// Check kinds.
const (
	checkStatus = iota
	checkSize
	checkBody
	checkHeader
)

// check is one parsed check.
type check struct {
	expr string
	kind int
	op   string
	n    int64
	text []byte         // checkBody
	name string         // checkHeader
	key  string         // name in lower case, as equalFold wants it
	re   *regexp.Regexp // checkHeader
	// fail is the check's failure, preallocated: only a slot's first
	// failure is worded with what was seen (the error sample).
	fail error
}

var checkOps = []string{"==", "!=", "<=", ">=", "<", ">"}

// ParseCheck reads one check expression; its error says what is wrong and
// gives the grammar.
func ParseCheck(s string) (check, error) {
	c := check{expr: strings.TrimSpace(s)}
	c.fail = fmt.Errorf("check %q failed", c.expr)
	e := c.expr
	const grammar = "want status==200, size==4096, body contains TEXT or header NAME ~ REGEXP"
	switch {
	case e == "":
		return c, errors.New("empty check: " + grammar)
	case strings.HasPrefix(e, "status") || strings.HasPrefix(e, "size"):
		name := "status"
		if strings.HasPrefix(e, "size") {
			name, c.kind = "size", checkSize
		}
		rest := strings.TrimSpace(e[len(name):])
		for _, op := range checkOps {
			if strings.HasPrefix(rest, op) {
				c.op = op
				break
			}
		}
		if c.op == "" {
			return c, fmt.Errorf("no comparison after %s: write %s==N (or !=, <, <=, >, >=)", name, name)
		}
		v := strings.TrimSpace(rest[len(c.op):])
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 || (name == "status" && (n < 100 || n > 999)) {
			what := "a byte count"
			if name == "status" {
				what = "a status code between 100 and 999"
			}
			return c, fmt.Errorf("%q is not %s", v, what)
		}
		c.n = n
	case strings.HasPrefix(e, "body "):
		rest := strings.TrimSpace(e[len("body "):])
		text, ok := strings.CutPrefix(rest, "contains ")
		if !ok || text == "" {
			return c, errors.New("write body contains TEXT")
		}
		if len(text) > MaxCheckText {
			return c, fmt.Errorf("the text is %d bytes, more than %d", len(text), MaxCheckText)
		}
		c.kind, c.text = checkBody, []byte(text)
	case strings.HasPrefix(e, "header "):
		name, re, ok := strings.Cut(strings.TrimSpace(e[len("header "):]), "~")
		name = strings.TrimSpace(name)
		if !ok || name == "" || strings.ContainsAny(name, " \t:") {
			return c, errors.New("write header NAME ~ REGEXP (e.g. header Content-Type ~ json)")
		}
		rx, err := regexp.Compile(strings.TrimSpace(re))
		if err != nil {
			return c, fmt.Errorf("REGEXP: %w", err)
		}
		c.kind, c.name, c.key, c.re = checkHeader, name, strings.ToLower(name), rx
	default:
		return c, errors.New(grammar)
	}
	return c, nil
}

// parseChecks parses every check, the first error naming its place.
func parseChecks(exprs []string) ([]check, error) {
	if len(exprs) > MaxChecks {
		return nil, fmt.Errorf("%d checks, more than %d", len(exprs), MaxChecks)
	}
	var out []check
	for i, e := range exprs {
		c, err := ParseCheck(e)
		if err != nil {
			if len(exprs) > 1 {
				return nil, fmt.Errorf("check %d of %d, %q: %w", i+1, len(exprs), e, err)
			}
			return nil, fmt.Errorf("check %q: %w", e, err)
		}
		out = append(out, c)
	}
	return out, nil
}

func (c *check) compare(v int64) bool {
	switch c.op {
	case "==":
		return v == c.n
	case "!=":
		return v != c.n
	case "<":
		return v < c.n
	case "<=":
		return v <= c.n
	case ">":
		return v > c.n
	}
	return v >= c.n
}

// checkState is one slot's checks in progress over the response it reads.
type checkState struct {
	checks   []check
	bodyText bool // some check looks into the body
	maxText  int  // the longest body text
	// Per response:
	size    int64
	status  int
	failed  int    // index+1 of the first failed status or header check
	found   []bool // per check: its body text was seen
	carry   []byte // the last maxText-1 body bytes, to find a text across reads
	joint   []byte // scratch for carry + the next read's start
	sampled bool   // the slot's first failure was worded in full
}

func newCheckState(cs []check) *checkState {
	st := &checkState{checks: cs, found: make([]bool, len(cs))}
	for _, c := range cs {
		if c.kind == checkBody {
			st.bodyText = true
			st.maxText = max(st.maxText, len(c.text))
		}
	}
	st.carry = make([]byte, 0, st.maxText)
	st.joint = make([]byte, 0, 2*st.maxText)
	return st
}

// begin starts a new response.
func (st *checkState) begin() {
	st.size, st.status, st.failed = 0, 0, 0
	clear(st.found)
	st.carry = st.carry[:0]
}

// header judges the status and header checks on a final response's
// header block (status line included).
func (st *checkState) header(block []byte, status int) {
	st.status = status
	for i := range st.checks {
		c := &st.checks[i]
		switch c.kind {
		case checkStatus:
			if !c.compare(int64(status)) && st.failed == 0 {
				st.failed = i + 1
			}
		case checkHeader:
			if !headerMatches(block, c) && st.failed == 0 {
				st.failed = i + 1
			}
		}
	}
}

// final judges the status and header checks of a final response whose
// fields were decoded apart, HPACK or QPACK (HTTP/2, HTTP/3): hit[i] says
// whether some field matched header check i (matchField).
func (st *checkState) final(status int, hit []bool) {
	st.status = status
	for i := range st.checks {
		c := &st.checks[i]
		switch {
		case c.kind == checkStatus && !c.compare(int64(status)),
			c.kind == checkHeader && !hit[i]:
			if st.failed == 0 {
				st.failed = i + 1
			}
		}
	}
}

// matchField marks in hit the header checks of cs that a decoded field
// name: value satisfies.
func matchField(cs []check, hit []bool, name, value string) {
	for i := range cs {
		c := &cs[i]
		if c.kind == checkHeader && !hit[i] && strings.EqualFold(name, c.name) && c.re.MatchString(value) {
			hit[i] = true
		}
	}
}

// hasHeaderChecks reports whether some check looks at a header (the
// HTTP/2 and HTTP/3 clients then decode every field, not only :status).
func hasHeaderChecks(cs []check) bool {
	for i := range cs {
		if cs[i].kind == checkHeader {
			return true
		}
	}
	return false
}

// headerMatches reports whether a header c.name of block has a value c.re
// matches.
func headerMatches(block []byte, c *check) bool {
	rest := block
	if i := bytes.IndexByte(rest, '\n'); i >= 0 {
		rest = rest[i+1:] // the status line
	}
	for len(rest) > 0 {
		line := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i], rest[i+1:]
		} else {
			rest = nil
		}
		k, v, ok := bytes.Cut(trimCR(line), []byte{':'})
		if ok && equalFold(trimSpace(k), c.key) && c.re.Match(trimSpace(v)) {
			return true
		}
	}
	return false
}

// body takes body bytes as they pass, in place.
func (st *checkState) body(b []byte) {
	st.size += int64(len(b))
	if !st.bodyText || len(b) == 0 {
		return
	}
	for i := range st.checks {
		c := &st.checks[i]
		if c.kind != checkBody || st.found[i] {
			continue
		}
		if len(st.carry) > 0 {
			j := append(append(st.joint[:0], st.carry...), b[:min(len(b), len(c.text)-1)]...)
			if bytes.Contains(j, c.text) {
				st.found[i] = true
				continue
			}
		}
		st.found[i] = bytes.Contains(b, c.text)
	}
	keep := st.maxText - 1
	if keep <= 0 {
		return
	}
	if len(b) >= keep {
		st.carry = append(st.carry[:0], b[len(b)-keep:]...)
		return
	}
	st.carry = append(st.carry, b...)
	if n := len(st.carry); n > keep {
		st.carry = st.carry[:copy(st.carry, st.carry[n-keep:])]
	}
}

// verdict is the complete response's outcome: nil, or the first failed
// check's error (worded with what was seen for the slot's first one).
func (st *checkState) verdict() error {
	bad := st.failed
	for i := range st.checks {
		if bad != 0 && bad <= i+1 {
			break
		}
		c := &st.checks[i]
		switch {
		case c.kind == checkSize && !c.compare(st.size),
			c.kind == checkBody && !st.found[i]:
			bad = i + 1
		}
	}
	if bad == 0 {
		return nil
	}
	c := &st.checks[bad-1]
	if st.sampled {
		return c.fail
	}
	st.sampled = true
	switch c.kind {
	case checkStatus:
		return fmt.Errorf("check %q failed: status %d", c.expr, st.status)
	case checkSize:
		return fmt.Errorf("check %q failed: a body of %d bytes", c.expr, st.size)
	case checkBody:
		return fmt.Errorf("check %q failed: not in the %d-byte body", c.expr, st.size)
	}
	return fmt.Errorf("check %q failed: no %s header matches", c.expr, c.name)
}

// newReader is a slot's response reader, running the load's checks if it
// has any.
func (r *runner) newReader() *reader {
	rd := newReader(nil)
	if r.checks != nil {
		rd.chk = newCheckState(r.checks)
	}
	return rd
}

// validateChecks is Validate's rule for Checks: each parses, at most
// MaxChecks.
func (o Options) validateChecks() []error {
	var errs []error
	if len(o.Checks) > MaxChecks {
		errs = append(errs, &FieldError{Field: "checks", Value: strconv.Itoa(len(o.Checks)), Reason: fmt.Sprintf("at most %d checks", MaxChecks)})
	}
	for _, e := range o.Checks {
		if _, err := ParseCheck(e); err != nil {
			errs = append(errs, &FieldError{Field: "checks", Value: strconv.Quote(e), Reason: err.Error()})
		}
	}
	return errs
}
