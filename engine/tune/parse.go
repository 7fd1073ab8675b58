package tune

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// MaxCPU is the largest CPU number a CPU list may name (the size of the
// kernel's affinity mask as seen through sched_setaffinity(2), minus one).
const MaxCPU = 1023

// ParseCPUList parses a CPU list in the kernel's cpuset syntax: "0", "1-3",
// "0,2-3". The result is sorted and without duplicates. An empty list is an
// error.
func ParseCPUList(s string) ([]int, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("parsing cpu list %q: empty", s)
	}
	seen := map[int]bool{}
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			return nil, fmt.Errorf("parsing cpu list %q: empty element", s)
		}
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := parseCPU(lo)
		if err != nil {
			return nil, fmt.Errorf("parsing cpu list %q: %w", s, err)
		}
		b := a
		if isRange {
			if b, err = parseCPU(hi); err != nil {
				return nil, fmt.Errorf("parsing cpu list %q: %w", s, err)
			}
			if b < a {
				return nil, fmt.Errorf("parsing cpu list %q: range %q runs backwards", s, part)
			}
		}
		for c := a; c <= b; c++ {
			seen[c] = true
		}
	}
	out := make([]int, 0, len(seen))
	for c := range seen {
		out = append(out, c)
	}
	sort.Ints(out)
	return out, nil
}

func parseCPU(s string) (int, error) {
	s = strings.TrimSpace(s)
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%q is not a cpu number", s)
	}
	if n > MaxCPU {
		return 0, fmt.Errorf("cpu %d is above the maximum %d", n, MaxCPU)
	}
	return n, nil
}

// FormatCPUList is the inverse of ParseCPUList: [0 2 3] → "0,2-3".
func FormatCPUList(cpus []int) string {
	c := append([]int(nil), cpus...)
	sort.Ints(c)
	var b strings.Builder
	for i := 0; i < len(c); {
		j := i
		for j+1 < len(c) && c[j+1] <= c[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		if c[j] == c[i] {
			fmt.Fprintf(&b, "%d", c[i])
		} else {
			fmt.Fprintf(&b, "%d-%d", c[i], c[j])
		}
		i = j + 1
	}
	return b.String()
}

// Unlimited is the value of a limit set to "unlimited" (RLIM_INFINITY).
const Unlimited = uint64(math.MaxUint64)

// rlimitResources maps the names accepted in a tune step (the names of
// prlimit(1) and ulimit) to resource numbers.
var rlimitResources = map[string]int{
	"as":         unix.RLIMIT_AS,
	"core":       unix.RLIMIT_CORE,
	"cpu":        unix.RLIMIT_CPU,
	"data":       unix.RLIMIT_DATA,
	"fsize":      unix.RLIMIT_FSIZE,
	"locks":      unix.RLIMIT_LOCKS,
	"memlock":    unix.RLIMIT_MEMLOCK,
	"msgqueue":   unix.RLIMIT_MSGQUEUE,
	"nice":       unix.RLIMIT_NICE,
	"nofile":     unix.RLIMIT_NOFILE,
	"nproc":      unix.RLIMIT_NPROC,
	"rss":        unix.RLIMIT_RSS,
	"rtprio":     unix.RLIMIT_RTPRIO,
	"rttime":     unix.RLIMIT_RTTIME,
	"sigpending": unix.RLIMIT_SIGPENDING,
	"stack":      unix.RLIMIT_STACK,
}

// RlimitNames lists the limit names a tune step accepts, sorted.
func RlimitNames() []string {
	out := make([]string, 0, len(rlimitResources))
	for n := range rlimitResources {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// ParseRlimits validates the `rlimits` map of a tune step and merges the
// `nofile` shorthand (ignored when 0). Values are decimal numbers or
// "unlimited". Names are the lower-case names of prlimit(1) ("nofile",
// "nproc", "memlock", "core", …); "RLIMIT_NOFILE" is accepted too.
func ParseRlimits(m map[string]string, nofile int) (map[string]uint64, error) {
	out := make(map[string]uint64, len(m)+1)
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		name := strings.TrimPrefix(strings.ToLower(strings.TrimSpace(k)), "rlimit_")
		if _, ok := rlimitResources[name]; !ok {
			return nil, fmt.Errorf("parsing rlimit %q: unknown limit (known: %s)", k, strings.Join(RlimitNames(), ", "))
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("parsing rlimit %q: %s is given twice", k, name)
		}
		v, err := parseLimit(m[k])
		if err != nil {
			return nil, fmt.Errorf("parsing rlimit %s: %w", name, err)
		}
		out[name] = v
	}
	if nofile < 0 {
		return nil, fmt.Errorf("parsing nofile: %d is negative", nofile)
	}
	if nofile > 0 {
		if v, ok := out["nofile"]; ok && v != uint64(nofile) {
			return nil, fmt.Errorf("parsing nofile: nofile = %d conflicts with rlimits.nofile = %s", nofile, formatLimit(v))
		}
		out["nofile"] = uint64(nofile)
	}
	return out, nil
}

func parseLimit(s string) (uint64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	if t == "unlimited" || t == "infinity" {
		return Unlimited, nil
	}
	v, err := strconv.ParseUint(t, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a number or \"unlimited\"", s)
	}
	return v, nil
}

func formatLimit(v uint64) string {
	if v == Unlimited {
		return "unlimited"
	}
	return strconv.FormatUint(v, 10)
}
