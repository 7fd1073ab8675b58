package tailbuf

import (
	"fmt"
	"strings"
	"testing"
)

// TestBufferKeepsTheEnd: after more than Size bytes in writes of every
// size, the buffer holds exactly the last Size bytes, and Lines the last
// n lines, indented.
func TestBufferKeepsTheEnd(t *testing.T) {
	var all strings.Builder
	var b Buffer
	for i := range 700 {
		s := fmt.Sprintf("line %d %s\n", i, strings.Repeat("x", i%37))
		all.WriteString(s)
		if n, err := b.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write: %d, %v", n, err)
		}
	}
	want := all.String()[all.Len()-Size:]
	if got := b.String(); got != want {
		t.Errorf("kept %d bytes, not the last %d written", len(got), Size)
	}
	lines := strings.Split(b.Lines(3, "  "), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[2], "  line 699 ") || !strings.HasPrefix(lines[0], "  line 697 ") {
		t.Errorf("Lines(3): %q", lines)
	}
	var short Buffer
	short.Write([]byte("only\n"))
	if got := short.Lines(10, "> "); got != "> only" {
		t.Errorf("Lines of one line: %q", got)
	}
}
