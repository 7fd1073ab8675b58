package units

import (
	"fmt"
	"math/big"
	"strconv"
	"strings"
)

// MaxSize is the largest size ParseSize accepts (1 TiB): larger values are
// almost certainly typos.
const MaxSize int64 = 1 << 40

// units maps lower-case suffixes to their multiplier. Single letters follow
// dd(1) and nginx (k = 1024); two-letter SI suffixes are decimal (kB = 1000);
// IEC suffixes are binary (KiB = 1024).
var units = map[string]int64{
	"": 1, "b": 1,
	"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40,
	"kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
	"ki": 1 << 10, "mi": 1 << 20, "gi": 1 << 30, "ti": 1 << 40,
	"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
}

// ParseSize parses a byte count: a non-negative decimal number, optionally
// followed (with or without one space) by a unit, case-insensitively:
//
//	B            1
//	k  M  G  T   1024, 1024², 1024³, 1024⁴ (as dd and nginx read them)
//	KB MB GB TB  1000, 1000², 1000³, 1000⁴
//	KiB MiB GiB TiB (or Ki Mi Gi Ti)  1024, 1024², 1024³, 1024⁴
//
// Fractions are allowed when the result is a whole number of bytes
// ("2.5MiB" is 2621440, "0.1k" is an error). The result is at most MaxSize.
func ParseSize(s string) (int64, error) {
	in := strings.TrimSpace(s)
	if in == "" {
		return 0, fmt.Errorf("%q is not a size (examples: 6, 4KiB, 1MiB, 2.5MiB)", s)
	}
	i := 0
	for i < len(in) && (in[i] >= '0' && in[i] <= '9' || in[i] == '.') {
		i++
	}
	num, unit := in[:i], strings.ToLower(strings.TrimPrefix(in[i:], " "))
	if num == "" || strings.Count(num, ".") > 1 || num == "." {
		return 0, fmt.Errorf("%q is not a size: want a non-negative number and an optional unit (examples: 6, 4KiB, 1MiB, 2.5MiB)", s)
	}
	mult, ok := units[unit]
	if !ok {
		return 0, fmt.Errorf("%q has an unknown unit %q (use B, k, KiB, KB, M, MiB, MB, G, GiB, GB, T, TiB or TB)", s, in[i:])
	}
	if !strings.Contains(num, ".") {
		// The common case, without allocating: a whole number.
		v, err := strconv.ParseInt(num, 10, 64)
		if err != nil || v > MaxSize/mult {
			return 0, fmt.Errorf("%q is larger than the largest size, %d bytes (1 TiB)", s, MaxSize)
		}
		return v * mult, nil
	}
	r, ok := new(big.Rat).SetString(num)
	if !ok {
		return 0, fmt.Errorf("%q is not a size: %q is not a number", s, num)
	}
	r.Mul(r, new(big.Rat).SetInt64(mult))
	if !r.IsInt() {
		return 0, fmt.Errorf("%q is %s bytes, not a whole number of bytes", s, r.FloatString(3))
	}
	n := r.Num()
	if !n.IsInt64() || n.Int64() > MaxSize {
		return 0, fmt.Errorf("%q is larger than the largest size, %d bytes (1 TiB)", s, MaxSize)
	}
	return n.Int64(), nil
}

// FormatSize writes a byte count for a message: bytes below 1 KiB, else
// the largest binary unit it reaches (KiB, MiB, GiB, TiB), with one
// decimal unless whole ("16 MiB", "3.5 KiB", "20 GiB").
func FormatSize(n int64) string {
	if n < 1<<10 {
		if n == 1 {
			return "1 byte"
		}
		return strconv.FormatInt(n, 10) + " bytes"
	}
	unit, div := "KiB", int64(1<<10)
	for _, u := range []struct {
		name string
		div  int64
	}{{"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40}} {
		if n >= u.div {
			unit, div = u.name, u.div
		}
	}
	if n%div == 0 {
		return strconv.FormatInt(n/div, 10) + " " + unit
	}
	return strconv.FormatFloat(float64(n)/float64(div), 'f', 1, 64) + " " + unit
}
