package load

import (
	"fmt"
	"strings"
	"testing"
)

// TestHeaderTargetsBounded: the text summary's header names a few targets
// and counts the rest, so a script's 1,000 URLs are not one long line.
func TestHeaderTargetsBounded(t *testing.T) {
	var urls []string
	for i := range 1000 {
		urls = append(urls, fmt.Sprintf("http://127.0.0.1:8080/items/%d", i))
	}
	var b strings.Builder
	if err := WriteText(&b, &Result{Targets: urls, Threads: 1, Connections: 1}, false); err != nil {
		t.Fatal(err)
	}
	head, _, _ := strings.Cut(b.String(), "\n")
	if len(head) > 200 || !strings.Contains(head, "and 997 more URLs") {
		t.Errorf("header of %d characters: %q", len(head), head)
	}
	if got := targetList(urls[:2]); got != urls[0]+", "+urls[1] {
		t.Errorf("two targets: %q", got)
	}
}
