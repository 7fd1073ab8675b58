package main

import (
	"strings"
	"testing"
)

// TestRunSummaryFilter: with reproduce -q the run's warnings and failed
// trials pass, in pieces as they come, and its final summary lines do not
// (the verdict names the run).
func TestRunSummaryFilter(t *testing.T) {
	var b strings.Builder
	f := &runSummaryFilter{w: &b}
	in := "warning: trial c01-r1: rlimit nofile lowered\n" +
		"[2/4] trial c02-r1 size=6: failed in 1.2s\n    connection refused\n" +
		"run 20261204T030000Z-abcd ok: 4 ok, 0 failed of 4 trials\nresults: /tmp/x/20261204T030000Z-abcd\n" +
		"claims: 2 hold (benchflow report /tmp/x shows them)\nthe last line"
	for i := 0; i < len(in); i += 7 {
		if _, err := f.Write([]byte(in[i:min(i+7, len(in))])); err != nil {
			t.Fatal(err)
		}
	}
	f.Flush()
	want := "warning: trial c01-r1: rlimit nofile lowered\n[2/4] trial c02-r1 size=6: failed in 1.2s\n    connection refused\nthe last line"
	if b.String() != want {
		t.Errorf("filtered:\n%s\nwant:\n%s", b.String(), want)
	}
}
