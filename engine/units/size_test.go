package units

import (
	"fmt"
	"strings"
	"testing"
)

func TestParseSize(t *testing.T) {
	good := map[string]int64{
		"0":        0,
		"6":        6,
		"6B":       6,
		"4KiB":     4096,
		"4 KiB":    4096,
		"4kib":     4096,
		"4Ki":      4096,
		"1MiB":     1 << 20,
		"2.5MiB":   2621440,
		"1k":       1024,
		"1K":       1024,
		"1M":       1 << 20,
		"1MB":      1000000,
		"1kB":      1000,
		"1.5KB":    1500,
		"1.1KB":    1100,
		"1GiB":     1 << 30,
		"1TiB":     1 << 40,
		" 12 ":     12,
		"0.5k":     512,
		"007":      7,
		".5k":      512,
		"1.000000": 1,
	}
	for in, want := range good {
		got, err := ParseSize(in)
		if err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	bad := map[string]string{
		"":                        "is not a size",
		"   ":                     "is not a size",
		"-1":                      "is not a size",
		"abc":                     "is not a size",
		"KiB":                     "is not a size",
		"1.5":                     "not a whole number",
		"0.1k":                    "not a whole number",
		"4XB":                     `unknown unit "XB"`,
		"4 KiB B":                 "unknown unit",
		"1.2.3":                   "is not a size",
		".":                       "is not a size",
		"1e3":                     "unknown unit",
		"2TiB":                    "larger than the largest size",
		"99999999999999999999999": "larger than the largest size",
		"NaN":                     "is not a size",
		"4  KiB":                  "unknown unit",
	}
	for in, want := range bad {
		got, err := ParseSize(in)
		if err == nil {
			t.Errorf("ParseSize(%q) = %d, want an error containing %q", in, got, want)
			continue
		}
		if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), fmt.Sprintf("%q", in)) {
			t.Errorf("ParseSize(%q) error %q: want it to quote the input and contain %q", in, err, want)
		}
	}
}

func ExampleParseSize() {
	for _, s := range []string{"6", "4KiB", "2.5MiB", "1k", "1MB"} {
		n, _ := ParseSize(s)
		fmt.Println(s, n)
	}
	_, err := ParseSize("0.1k")
	fmt.Println(err)
	// Output:
	// 6 6
	// 4KiB 4096
	// 2.5MiB 2621440
	// 1k 1024
	// 1MB 1000000
	// "0.1k" is 102.400 bytes, not a whole number of bytes
}

func TestFormatSize(t *testing.T) {
	for n, want := range map[int64]string{
		0: "0 bytes", 1: "1 byte", 1023: "1023 bytes", 1024: "1 KiB", 4 << 10: "4 KiB",
		1536: "1.5 KiB", 16 << 20: "16 MiB", 3 << 20: "3 MiB", 20 << 30: "20 GiB", 1 << 40: "1 TiB",
	} {
		if got := FormatSize(n); got != want {
			t.Errorf("FormatSize(%d) = %q, want %q", n, got, want)
		}
	}
}
