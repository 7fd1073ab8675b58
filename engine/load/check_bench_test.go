package load

import (
	"strings"
	"testing"
)

// BenchmarkParseChecks is the parser's cost per 4 KiB response without
// checks (the hot path as before checks existed), with a status check,
// and with a body check searching the whole body (the target: a
// body check adds at most 5% CPU per request, measured end to end by the
// load comparisons of `make bench`). Measure on a quiet machine:
//
//	go test -run '^$' -bench BenchmarkParseChecks -benchmem -count 10 ./engine/load
func BenchmarkParseChecks(b *testing.B) {
	resp := []byte("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 4096\r\n\r\n" + strings.Repeat("x", 4090) + "NEEDLE")
	for _, c := range []struct {
		name   string
		checks []string
	}{
		{"none", nil},
		{"status", []string{"status==200"}},
		{"header", []string{"header Content-Type ~ json"}},
		{"body", []string{"body contains NEEDLE"}},
	} {
		b.Run(c.name, func(b *testing.B) {
			var p parser
			if c.checks != nil {
				cs, err := parseChecks(c.checks)
				if err != nil {
					b.Fatal(err)
				}
				p.chk = newCheckState(cs)
			}
			b.SetBytes(int64(len(resp)))
			b.ReportAllocs()
			for b.Loop() {
				p.begin(false)
				// Two reads, as a 4 KiB response often arrives.
				used, _, _ := p.feed(resp[:2000])
				_, done, err := p.feed(resp[used:])
				if err != nil || !done || p.resp.checkErr != nil {
					b.Fatalf("done %v, err %v, check %v", done, err, p.resp.checkErr)
				}
			}
		})
	}
}
