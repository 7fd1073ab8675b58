package measure

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

func TestParseThreshold(t *testing.T) {
	good := map[string]Threshold{
		"p99<10ms":       {Measure: "p", Percentile: 99, Op: "<", Bound: 10000, Latency: 10 * time.Millisecond},
		" p99.9 <= 1.5s": {Measure: "p", Percentile: 99.9, Op: "<=", Bound: 1.5e6, Latency: 1500 * time.Millisecond},
		"mean<250us":     {Measure: "mean", Op: "<", Bound: 250, Latency: 250 * time.Microsecond},
		"max < 2s":       {Measure: "max", Op: "<", Bound: 2e6, Latency: 2 * time.Second},
		"rps>1000":       {Measure: "rps", Op: ">", Bound: 1000},
		"rps >= 99.5":    {Measure: "rps", Op: ">=", Bound: 99.5},
		"errors<1%":      {Measure: "errors", Op: "<", Bound: 0.01},
		"errors<=0.001":  {Measure: "errors", Op: "<=", Bound: 0.001},
		"missed==0":      {Measure: "missed", Op: "==", Bound: 0},
	}
	for in, want := range good {
		got, err := ParseThreshold(in)
		want.Expr = strings.TrimSpace(in)
		if err != nil || got != want {
			t.Errorf("ParseThreshold(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	// Each bad input names what is wrong and where (the column of the
	// part at fault).
	bad := []struct {
		in, msg string
		col     int
	}{
		{"", "empty", 1},
		{"p99", "no comparison", 1},
		{"<10ms", "no measure", 1},
		{"p99<", "no bound", 5},
		{"p99<10", "without its unit", 5},
		{"p99 < 10xs", "not a latency", 7},
		{"p100<10ms", "not a percentile", 1},
		{"  latency<10ms", "unknown measure \"latency\"", 3},
		{"rps>fast", "not a rate", 5},
		{"errors<150%", "more than 100%", 8},
		{"missed<-1", "not a count", 8},
		{"p99==10ms", "== compares counts", 4},
		{"p99<0ms", "not a positive latency", 5},
	}
	for _, c := range bad {
		_, err := ParseThreshold(c.in)
		var te *ThresholdError
		if !errors.As(err, &te) {
			t.Errorf("ParseThreshold(%q) error = %v, want a ThresholdError", c.in, err)
			continue
		}
		if !strings.Contains(te.Msg, c.msg) || te.Column != c.col {
			t.Errorf("ParseThreshold(%q) = column %d %q; want column %d and %q", c.in, te.Column, te.Msg, c.col, c.msg)
		}
	}
	if _, err := ParseThresholds([]string{"p99<10ms", "rps>"}); err == nil || !strings.HasPrefix(err.Error(), "threshold 2: ") {
		t.Errorf("ParseThresholds: error %v, want it to name the second threshold", err)
	}
}

func TestJudgeThresholds(t *testing.T) {
	h := hdrhistogram.New(1, 10_000_000, 3)
	for i := 1; i <= 100; i++ {
		h.RecordValue(int64(i * 1000)) // 1 ms … 100 ms
	}
	r := &Record{Requests: 100, Errors: 2, ErrorsBy: map[string]int64{"timeout": 2}, Duration: 10 * time.Second, Latency: h, Missed: 3}
	cases := map[string]bool{
		"p50<60ms": true, "p50<40ms": false, "p99<=99.9ms": true, "max<100ms": false, "mean<60ms": true,
		"rps>9": true, "rps>11": false, "errors<2%": true, "errors<1%": false,
		"missed==0": false, "missed<=3": true,
	}
	var ts []Threshold
	for expr := range cases {
		th, err := ParseThreshold(expr)
		if err != nil {
			t.Fatal(err)
		}
		ts = append(ts, th)
	}
	failed := JudgeThresholds(ts, r)
	nfail := 0
	for _, res := range r.Thresholds {
		if res.OK != cases[res.Expr] {
			t.Errorf("%s: ok = %v (value %g %s, %s), want %v", res.Expr, res.OK, res.Value, res.Unit, res.Text, cases[res.Expr])
		}
		if !cases[res.Expr] {
			nfail++
		}
	}
	if len(failed) != nfail || len(r.Thresholds) != len(cases) {
		t.Errorf("%d failed of %d judged, want %d of %d", len(failed), len(r.Thresholds), nfail, len(cases))
	}
	// No response: a latency threshold cannot hold.
	empty := &Record{Errors: 5, ErrorsBy: map[string]int64{"connect": 5}, Duration: time.Second}
	th, _ := ParseThreshold("p99<1s")
	if res := th.Judge(empty); res.OK || res.Text != "no response" {
		t.Errorf("p99 without responses: %+v, want a failure saying no response", res)
	}
	if j := ToJSON(r); len(j.Thresholds) != len(cases) {
		t.Errorf("JSON thresholds: %d, want %d", len(j.Thresholds), len(cases))
	}
}
