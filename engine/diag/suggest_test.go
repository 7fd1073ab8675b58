package diag

import "testing"

// TestSuggest: the closest option fewer than 3 edits away is named, and
// nothing when every option is farther.
func TestSuggest(t *testing.T) {
	opts := []string{"connections", "threads", "duration"}
	for given, want := range map[string]string{
		"conections": ` Did you mean "connections"?`,
		"thread":     ` Did you mean "threads"?`,
		"latency":    "",
	} {
		if got := Suggest(given, opts); got != want {
			t.Errorf("Suggest(%q) = %q, want %q", given, got, want)
		}
	}
}
