package collect

import "testing"

// The /proc parsers must never panic, whatever a kernel (or a process
// naming itself) puts in those files.

func FuzzParseStat(f *testing.F) {
	f.Add([]byte("1 (init) S 0 1 1 0 -1 4194560 1 0 0 0 5 7 0 0 20 0 1 0 10 1000 100 18446744073709551615\n"))
	f.Add([]byte("2 (a) b)) R"))
	f.Add([]byte(")("))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := parseStat(b)
		if err == nil && s.threads < 0 {
			t.Errorf("negative threads from %q", b)
		}
	})
}

func FuzzParseNetDev(f *testing.F) {
	f.Add([]byte("h\nh\n lo: 1 2 0 0 0 0 0 0 3 4 0 0 0 0 0 0\n"))
	f.Add([]byte("h\nh\n:\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m := map[string]ifCounters{}
		_ = parseNetDev(b, m)
		parseProcStat(b)
		parseCtxSwitches(b)
		parseStatmRSS(b)
	})
}
