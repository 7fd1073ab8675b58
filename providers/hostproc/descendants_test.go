package hostproc

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestDescendants: the processes below the given ones, at any depth, and
// no other (a sibling, the given ones themselves, a process under init).
func TestDescendants(t *testing.T) {
	root := t.TempDir()
	for pid, ppid := range map[int]int{1: 0, 10: 1, 11: 10, 12: 11, 13: 1, 14: 13, 20: 10} {
		dir := filepath.Join(root, fmt.Sprint(pid))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		stat := fmt.Sprintf("%d (nginx: worker) S %d 0 0 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 100 0 0\n", pid, ppid)
		if err := os.WriteFile(filepath.Join(dir, "stat"), []byte(stat), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := Descendants(root, []int{10}), []int{11, 12, 20}; !reflect.DeepEqual(got, want) {
		t.Errorf("Descendants(10) = %v, want %v", got, want)
	}
	if got := Descendants(root, []int{12}); len(got) != 0 {
		t.Errorf("Descendants(12) = %v, want none", got)
	}
	if got := Descendants(root, nil); len(got) != 0 {
		t.Errorf("Descendants(nil) = %v, want none", got)
	}
}
