package units

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ParsePercent reads a percentage written "3%" or "3" (spaces around the
// number and the sign are ignored) as the fraction 0.03. It must be greater
// than 0 and at most 100%: tolerances and precisions.
func ParsePercent(s string) (float64, error) {
	v, ok := percent(s)
	if !ok || !(v > 0) || v > 100 {
		return 0, fmt.Errorf("%q is not a percentage between 0 and 100%% (e.g. \"5%%\")", s)
	}
	return v / 100, nil
}

// ParsePercentAny reads a percentage as ParsePercent does but allows 0 and
// any finite value above 100%: thresholds on a relative change, where
// "150%" (two and a half times as slow) is meaningful.
func ParsePercentAny(s string) (float64, error) {
	v, ok := percent(s)
	if !ok || v < 0 {
		return 0, fmt.Errorf("%q is not a percentage of 0 or more (e.g. \"5%%\", \"150%%\")", s)
	}
	return v / 100, nil
}

// percent is the number of a percentage, without its optional "%".
func percent(s string) (float64, bool) {
	t := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), "%"))
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, false
	}
	return v, true
}
