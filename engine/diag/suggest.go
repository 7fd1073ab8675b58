package diag

import (
	"fmt"

	"github.com/agext/levenshtein"
)

// Suggest returns ` Did you mean "x"?` for the option closest to given
// (fewer than 3 edits away), or "".
func Suggest(given string, options []string) string {
	best, bestDist := "", 1<<30
	for _, o := range options {
		if d := levenshtein.Distance(given, o, nil); d < bestDist && d < 3 {
			best, bestDist = o, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" Did you mean %q?", best)
}
