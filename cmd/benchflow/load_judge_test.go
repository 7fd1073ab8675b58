package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestLoadThresholds: --threshold judges the result; a met one exits 0, a
// failed one exits 99 (k6's status) with each failure named in the text
// output, on stderr, and in --json's thresholds.
func TestLoadThresholds(t *testing.T) {
	srv, _ := helloServer(t)
	out, errOut, code := runLoad(t, "-c", "2", "-t", "1", "-n", "200", "--threshold", "p99<10s", "--threshold", "errors<1%", srv.URL+"/")
	if code != 0 || !strings.Contains(out, "Thresholds:   all 2 met") || !strings.Contains(out, "ok      p99<10s") {
		t.Errorf("met thresholds: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = runLoad(t, "-c", "2", "-t", "1", "-n", "200", "--threshold", "p99<1us", "--threshold", "rps>0", "--threshold", "errors<=0%", srv.URL+"/missing")
	if code != thresholdExit {
		t.Errorf("failed thresholds: exit %d, want %d\n%s%s", code, thresholdExit, out, errOut)
	}
	for _, want := range []string{"Thresholds:   2 of 3 FAILED", "FAILED  p99<1us", "ok      rps>0", "FAILED  errors<=0%", "(was 100%)"} {
		if !strings.Contains(out, want) {
			t.Errorf("text output lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(errOut, "2 of 3 thresholds failed: p99<1us (was ") || !strings.Contains(errOut, "errors<=0% (was 100%)") {
		t.Errorf("stderr does not name the failed thresholds:\n%s", errOut)
	}
	out, errOut, code = runLoad(t, "--json", "-c", "2", "-t", "1", "-n", "100", "--threshold", "p99<1us", "--threshold", "rps>0", srv.URL+"/")
	var j struct {
		Thresholds []struct {
			Expr  string  `json:"expr"`
			Value float64 `json:"value"`
			Unit  string  `json:"unit"`
			OK    bool    `json:"ok"`
		} `json:"thresholds"`
	}
	if err := json.Unmarshal([]byte(out), &j); err != nil || code != thresholdExit {
		t.Fatalf("--json: exit %d, %v\n%s%s", code, err, out, errOut)
	}
	if len(j.Thresholds) != 2 || j.Thresholds[0].Expr != "p99<1us" || j.Thresholds[0].OK || j.Thresholds[0].Unit != "us" ||
		j.Thresholds[0].Value < 1 || j.Thresholds[1].Expr != "rps>0" || !j.Thresholds[1].OK || j.Thresholds[1].Value <= 0 {
		t.Errorf("--json thresholds = %+v", j.Thresholds)
	}
}

// TestLoadThresholdBadInput: a threshold that does not parse is refused
// before any load, naming the flag, the expression and the column.
func TestLoadThresholdBadInput(t *testing.T) {
	srv, hits := helloServer(t)
	for _, c := range []struct{ expr, want string }{
		{"p99<10", `--threshold (2 of 2) "p99<10", column 5: "10" is a latency without its unit`},
		{"latency<10ms", `--threshold (2 of 2) "latency<10ms", column 1: unknown measure "latency"`},
		{"rps=100", `--threshold (2 of 2) "rps=100", column 1: no comparison`},
	} {
		out, errOut, code := runLoad(t, "-n", "10", "--threshold", "p99<1s", "--threshold", c.expr, srv.URL+"/")
		if code != 1 || !strings.Contains(errOut, c.want) {
			t.Errorf("--threshold %q: exit %d, want 1 and %q\n%s%s", c.expr, code, c.want, out, errOut)
		}
	}
	if hits.Load() != 0 {
		t.Errorf("the server saw %d requests: a bad threshold must stop the load before it starts", hits.Load())
	}
	_, errOut, code := runLoad(t, "--find-max", "--threshold", "p99<1s", srv.URL+"/")
	if code != 1 || !strings.Contains(errOut, "--slo") {
		t.Errorf("--find-max --threshold: exit %d\n%s", code, errOut)
	}
}

// TestLoadMissedSends: the real binary at -R far above what one
// connection to a 20 ms server carries counts every intended send:
// intended is exactly rate × duration, missed is most of it, the warning
// says so, and a missed==0 threshold fails the load.
func TestLoadMissedSends(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(20 * time.Millisecond)
		w.Write([]byte("ok"))
	}))
	t.Cleanup(srv.Close)
	out, errOut, code := runLoad(t, "--json", "-c", "1", "-t", "1", "-R", "500", "-d", "1s", "--threshold", "missed==0", srv.URL+"/")
	var j struct {
		Requests   int64            `json:"requests"`
		Errors     int64            `json:"errors"`
		ErrorsBy   map[string]int64 `json:"errors_by"`
		Intended   int64            `json:"intended"`
		Missed     *int64           `json:"missed"`
		Unfinished *int64           `json:"unfinished"`
		Warning    string           `json:"warning"`
	}
	if err := json.Unmarshal([]byte(out), &j); err != nil || j.Missed == nil || j.Unfinished == nil {
		t.Fatalf("exit %d, %v\n%s%s", code, err, out, errOut)
	}
	if code != thresholdExit {
		t.Errorf("exit %d, want %d (missed==0 fails)", code, thresholdExit)
	}
	if j.Intended != 500 {
		t.Errorf("intended = %d, want 500 (500/s × 1s)", j.Intended)
	}
	if got := j.Requests + j.Errors - j.ErrorsBy["http"] + *j.Unfinished + *j.Missed; got != j.Intended {
		t.Errorf("outcomes + unfinished + missed = %d, want intended %d\n%s", got, j.Intended, out)
	}
	if *j.Missed < 300 || !strings.Contains(j.Warning, "never sent (missed)") {
		t.Errorf("missed = %d, warning %q: want most sends missed and named", *j.Missed, j.Warning)
	}
}
