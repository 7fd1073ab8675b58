package bundle

import (
	"bytes"
	"fmt"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/benchflow/benchflow/engine/pipeline"
)

// allowedSigner is one line of an allowed-signers file, as ssh-keygen(1)
// reads it (ALLOWED SIGNERS):
//
//	principals [options] keytype base64-key [comment]
//
// principals is a comma-separated list of patterns (possibly quoted);
// options are cert-authority, namespaces="list", valid-after="time" and
// valid-before="time".
type allowedSigner struct {
	line          int
	principals    string
	certAuthority bool
	namespaces    string // a pattern list; "" (with hasNamespaces false) allows any
	hasNamespaces bool
	validAfter    time.Time // zero: no bound
	validBefore   time.Time
	key           ssh.PublicKey
}

func readAllowedSigners(file string) ([]allowedSigner, error) {
	b, err := pipeline.ReadLocalFile(file)
	if err != nil {
		return nil, fmt.Errorf("reading the allowed signers: %w", err)
	}
	return parseAllowedSigners(file, b)
}

// parseAllowedSigners parses the allowed-signers file name holding b. As
// ssh-keygen -Y verify does, a malformed line is an error (not skipped):
// a typo must not silently drop a signer's restrictions.
func parseAllowedSigners(name string, b []byte) ([]allowedSigner, error) {
	var out []allowedSigner
	for n, line := range strings.Split(string(b), "\n") {
		s, err := parseAllowedSigner(strings.TrimRight(line, "\r"))
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %v (want: principals [options] keytype key, as in ssh-keygen(1)'s ALLOWED SIGNERS)", name, n+1, err)
		}
		if s != nil {
			s.line = n + 1
			out = append(out, *s)
		}
	}
	return out, nil
}

// parseAllowedSigner parses one line; nil for a blank or comment line.
func parseAllowedSigner(line string) (*allowedSigner, error) {
	rest := strings.TrimLeft(line, " \t")
	if rest == "" || rest[0] == '#' {
		return nil, nil
	}
	s := &allowedSigner{}
	if rest[0] == '"' {
		end := strings.IndexByte(rest[1:], '"')
		if end < 0 {
			return nil, fmt.Errorf("the principals' quote is not closed")
		}
		s.principals, rest = rest[1:1+end], rest[2+end:]
	} else {
		i := strings.IndexAny(rest, " \t")
		if i < 0 {
			return nil, fmt.Errorf("only principals, no key")
		}
		s.principals, rest = rest[:i], rest[i:]
	}
	if s.principals == "" || strings.Contains(","+s.principals+",", ",,") {
		return nil, fmt.Errorf("an empty principal in %q", s.principals)
	}
	rest = strings.TrimLeft(rest, " \t")
	if rest == "" {
		return nil, fmt.Errorf("no key after the principals %q", s.principals)
	}
	key, _, opts, tail, err := ssh.ParseAuthorizedKey([]byte(rest))
	if err != nil {
		return nil, fmt.Errorf("no valid SSH public key after the principals %q: %v", s.principals, err)
	}
	if len(bytes.TrimSpace(tail)) > 0 {
		return nil, fmt.Errorf("more than one key")
	}
	s.key = key
	for _, o := range opts {
		name, value, hasValue := strings.Cut(o, "=")
		switch strings.ToLower(name) {
		case "cert-authority":
			if hasValue {
				return nil, fmt.Errorf("option cert-authority takes no value")
			}
			s.certAuthority = true
			continue
		case "namespaces", "valid-after", "valid-before":
		default:
			return nil, fmt.Errorf("unsupported option %q (known: cert-authority, namespaces, valid-after, valid-before)", name)
		}
		if len(value) < 2 || value[0] != '"' || value[len(value)-1] != '"' {
			return nil, fmt.Errorf("option %s wants a quoted value: %s=\"…\"", name, name)
		}
		value = value[1 : len(value)-1]
		switch strings.ToLower(name) {
		case "namespaces":
			if s.hasNamespaces {
				return nil, fmt.Errorf("more than one namespaces option")
			}
			s.namespaces, s.hasNamespaces = value, true
		case "valid-after", "valid-before":
			t, err := parseSignerTime(value)
			if err != nil {
				return nil, fmt.Errorf("option %s: %v", name, err)
			}
			if strings.EqualFold(name, "valid-after") {
				s.validAfter = t
			} else {
				s.validBefore = t
			}
		}
	}
	if !s.validAfter.IsZero() && !s.validBefore.IsZero() && !s.validBefore.After(s.validAfter) {
		return nil, fmt.Errorf("valid-before is not after valid-after")
	}
	return s, nil
}

// parseSignerTime parses ssh-keygen's absolute times: YYYYMMDD,
// YYYYMMDDHHMM or YYYYMMDDHHMMSS, in UTC with a trailing Z, else in the
// local time zone.
func parseSignerTime(v string) (time.Time, error) {
	loc := time.Local
	if strings.HasSuffix(v, "Z") || strings.HasSuffix(v, "z") {
		v, loc = v[:len(v)-1], time.UTC
	}
	layout := map[int]string{8: "20060102", 12: "200601021504", 14: "20060102150405"}[len(v)]
	if layout == "" {
		return time.Time{}, fmt.Errorf("%q is not a time YYYYMMDD[HHMM[SS]][Z]", v)
	}
	t, err := time.ParseInLocation(layout, v, loc)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is not a time YYYYMMDD[HHMM[SS]][Z]", v)
	}
	return t, nil
}

// allowed returns the principals of the first line that allows key to
// sign for namespace at time now ("" if none does), and for the lines
// that list the key but do not allow it, why not.
func allowed(signers []allowedSigner, key ssh.PublicKey, namespace string, now time.Time) (principals string, why []string) {
	want := key.Marshal()
	for _, s := range signers {
		if !bytes.Equal(s.key.Marshal(), want) {
			continue
		}
		switch {
		case s.certAuthority:
			why = append(why, fmt.Sprintf("line %d lists it as a cert-authority, which vouches for certificates, not for its own signatures", s.line))
		case s.hasNamespaces && !matchPatternList(namespace, s.namespaces):
			why = append(why, fmt.Sprintf("line %d lists it for namespaces %q only", s.line, s.namespaces))
		case !s.validAfter.IsZero() && now.Before(s.validAfter):
			why = append(why, fmt.Sprintf("line %d lists it as valid only after %s", s.line, s.validAfter.Format(time.RFC3339)))
		case !s.validBefore.IsZero() && now.After(s.validBefore):
			why = append(why, fmt.Sprintf("line %d lists it as valid only before %s", s.line, s.validBefore.Format(time.RFC3339)))
		default:
			return s.principals, nil
		}
	}
	return "", why
}

// matchPatternList reports whether s matches the comma-separated pattern
// list (ssh_config(5)'s PATTERNS: * and ?, and a leading ! negates: a
// negated match refuses whatever else matches).
func matchPatternList(s, list string) bool {
	ok := false
	for _, p := range strings.Split(list, ",") {
		neg := strings.HasPrefix(p, "!")
		if matchPattern(s, strings.TrimPrefix(p, "!")) {
			if neg {
				return false
			}
			ok = true
		}
	}
	return ok
}

// matchPattern matches s against a pattern of * (any run) and ? (any one
// character).
func matchPattern(s, p string) bool {
	// Iterative glob with backtracking to the last star.
	si, pi, star, mark := 0, 0, -1, 0
	for si < len(s) {
		switch {
		case pi < len(p) && (p[pi] == '?' || p[pi] == s[si]):
			si, pi = si+1, pi+1
		case pi < len(p) && p[pi] == '*':
			star, mark = pi, si
			pi++
		case star >= 0:
			pi, mark = star+1, mark+1
			si = mark
		default:
			return false
		}
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}
