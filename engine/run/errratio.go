package run

import (
	"fmt"
	"strconv"

	"github.com/benchflow/benchflow/engine/measure"
	"github.com/benchflow/benchflow/engine/steps"
)

// tooManyErrors returns the reason a load step failed when the fraction of
// its requests that failed exceeds max (DefaultMaxErrorRatio when nil), or
// nil. Requests counts every attempt: completed responses (any status) plus
// the requests that got none (connect, timeout, read, write, parse errors).
func tooManyErrors(step string, res *measure.Record, max *float64) error {
	limit := steps.DefaultMaxErrorRatio
	if max != nil {
		limit = *max
	}
	if res == nil {
		return nil
	}
	attempts := res.Requests + res.Errors - res.ErrorsBy["http"]
	if attempts <= 0 || res.Errors == 0 {
		return nil
	}
	ratio := float64(res.Errors) / float64(attempts)
	if ratio <= limit {
		return nil
	}
	return fmt.Errorf("load %q: %s errors in %s requests (%s) > max_error_ratio %s: %s",
		step, groupDigits(res.Errors), groupDigits(attempts), percent(ratio), percent(limit), res.ErrorSummary())
}

// percent formats a ratio with one decimal, without a trailing ".0".
func percent(r float64) string {
	s := strconv.FormatFloat(100*r, 'f', 1, 64)
	if len(s) > 2 && s[len(s)-2:] == ".0" {
		s = s[:len(s)-2]
	}
	return s + "%"
}

// groupDigits writes n with thousands separators: 92006 → "92,006".
func groupDigits(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
