package units

import (
	"math"
	"strconv"
	"strings"
)

// FormatRate writes a rate (req/s) as the reports print it, without the
// unit: one decimal, thousands grouped ("12,345.6"); "-" for NaN.
func FormatRate(v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	return groupThousands(strconv.FormatFloat(v, 'f', 1, 64))
}

func groupThousands(s string) string {
	intPart, frac, _ := strings.Cut(s, ".")
	neg := strings.HasPrefix(intPart, "-")
	intPart = strings.TrimPrefix(intPart, "-")
	var b strings.Builder
	for i, r := range intPart {
		if i > 0 && (len(intPart)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	out := b.String()
	if neg {
		out = "-" + out
	}
	if frac != "" {
		out += "." + frac
	}
	return out
}

// FormatMS writes a latency of us µs in milliseconds as the reports print
// it, without the unit: three significant digits below 100 ms ("1.23",
// "12.3"), whole milliseconds from there ("123"); "-" for NaN.
func FormatMS(us float64) string {
	if math.IsNaN(us) {
		return "-"
	}
	ms := us / 1000
	switch {
	case ms >= 100:
		return strconv.FormatFloat(ms, 'f', 0, 64)
	case ms >= 10:
		return strconv.FormatFloat(ms, 'f', 1, 64)
	default:
		return strconv.FormatFloat(ms, 'f', 2, 64)
	}
}
