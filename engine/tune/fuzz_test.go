package tune

import (
	"slices"
	"testing"
)

func FuzzParseCPUList(f *testing.F) {
	for _, s := range []string{"0", "1-3", "0,2-3", "", "3-1", "1023", "0-1023", ",", "-"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cpus, err := ParseCPUList(s)
		if err != nil {
			return
		}
		if len(cpus) == 0 || !slices.IsSorted(cpus) || cpus[0] < 0 || cpus[len(cpus)-1] > MaxCPU {
			t.Fatalf("ParseCPUList(%q) = %v", s, cpus)
		}
		back, err := ParseCPUList(FormatCPUList(cpus))
		if err != nil || !slices.Equal(back, cpus) {
			t.Fatalf("%q: FormatCPUList round trip %v -> %q -> %v, %v", s, cpus, FormatCPUList(cpus), back, err)
		}
	})
}
