// Package tailbuf keeps the end of a process's output: what an error
// message quotes when a command fails (the ssh provider's helper, an exec
// step).
package tailbuf

import (
	"strings"
	"sync"
)

// Size is how many bytes a Buffer keeps.
const Size = 4096

// Buffer is an io.Writer that keeps the last Size bytes written to it;
// it is safe for concurrent use (stdout and stderr may share one).
type Buffer struct {
	mu sync.Mutex
	b  []byte
}

func (t *Buffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > Size {
		t.b = t.b[len(t.b)-Size:]
	}
	return len(p), nil
}

// String is what the buffer holds.
func (t *Buffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

// Lines is its last n lines, each indented by indent.
func (t *Buffer) Lines(n int, indent string) string {
	lines := strings.Split(strings.TrimRight(t.String(), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return indent + strings.Join(lines, "\n"+indent)
}
