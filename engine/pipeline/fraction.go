package pipeline

import (
	"fmt"
	"strconv"
	"strings"
)

// ParsePercent reads a percentage written "3%" (or "3") as the fraction
// 0.03. It must be greater than 0 and at most 100%.
func ParsePercent(s string) (float64, error) {
	t := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), "%"))
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || !(v > 0) || v > 100 {
		return 0, fmt.Errorf("%q is not a percentage between 0 and 100%% (e.g. \"5%%\")", s)
	}
	return v / 100, nil
}
