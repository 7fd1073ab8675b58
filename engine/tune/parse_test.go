package tune

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseCPUList(t *testing.T) {
	good := []struct {
		in   string
		want []int
	}{
		{"0", []int{0}},
		{"1-3", []int{1, 2, 3}},
		{"0,2-3", []int{0, 2, 3}},
		{" 3, 1 ,1-2", []int{1, 2, 3}},
		{"1023", []int{1023}},
	}
	for _, c := range good {
		got, err := ParseCPUList(c.in)
		if err != nil {
			t.Errorf("ParseCPUList(%q): %v", c.in, err)
			continue
		}
		if d := cmp.Diff(c.want, got); d != "" {
			t.Errorf("ParseCPUList(%q) (-want +got):\n%s", c.in, d)
		}
		if back, _ := ParseCPUList(FormatCPUList(got)); !cmp.Equal(back, got) {
			t.Errorf("FormatCPUList(%v) = %q does not parse back", got, FormatCPUList(got))
		}
	}
	bad := map[string]string{
		"":      "empty",
		"a":     "not a cpu number",
		"3-1":   "runs backwards",
		"1,,2":  "empty element",
		"-1":    "not a cpu number",
		"1024":  "above the maximum",
		"0-x":   "not a cpu number",
		"1-2-3": "not a cpu number",
	}
	for in, want := range bad {
		_, err := ParseCPUList(in)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseCPUList(%q) = %v, want error containing %q", in, err, want)
		}
	}
}

func TestFormatCPUList(t *testing.T) {
	for in, want := range map[string]string{"0": "0", "0,1,2,5,7-8": "0-2,5,7-8", "4,2": "2,4"} {
		c, err := ParseCPUList(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := FormatCPUList(c); got != want {
			t.Errorf("FormatCPUList(%v) = %q, want %q", c, got, want)
		}
	}
}

func TestParseRlimits(t *testing.T) {
	got, err := ParseRlimits(map[string]string{"nproc": "4096", "CORE": "unlimited", "RLIMIT_MEMLOCK": "65536"}, 65535)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]uint64{"nproc": 4096, "core": Unlimited, "memlock": 65536, "nofile": 65535}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	if got, err := ParseRlimits(nil, 0); err != nil || len(got) != 0 {
		t.Errorf("ParseRlimits(nil, 0) = %v, %v; want empty", got, err)
	}
	bad := []struct {
		m      map[string]string
		nofile int
		want   string
	}{
		{map[string]string{"files": "1"}, 0, `parsing rlimit "files": unknown limit (known: as, core,`},
		{map[string]string{"nofile": "lots"}, 0, `parsing rlimit nofile: "lots" is not a number`},
		{map[string]string{"nofile": "-1"}, 0, `is not a number`},
		{map[string]string{"nofile": "100"}, 200, "conflicts"},
		{map[string]string{"nofile": "1", "NOFILE": "1"}, 0, "given twice"},
		{nil, -5, "negative"},
	}
	for _, c := range bad {
		_, err := ParseRlimits(c.m, c.nofile)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseRlimits(%v, %d) = %v, want error containing %q", c.m, c.nofile, err, c.want)
		}
	}
	// The same value twice is not a conflict.
	if _, err := ParseRlimits(map[string]string{"nofile": "100"}, 100); err != nil {
		t.Errorf("nofile given twice with the same value: %v", err)
	}
}

func ExampleParseCPUList() {
	cpus, _ := ParseCPUList("0,2-3")
	fmt.Println(cpus, FormatCPUList(cpus))
	// Output: [0 2 3] 0,2-3
}
