package load

import (
	"context"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestRampFollowsTheStages: the intended send times solve the ramp's
// cumulative count exactly: for a ramp from 0 to 1000 req/s over 10 s,
// N(t) = 50·t², so send k is at √(k/50) s; a flat stage after it sends
// every 1 ms; a ramp down mirrors the ramp up. The count of sends before
// any time is the count of the walk.
func TestRampFollowsTheStages(t *testing.T) {
	r := newRamp(0, []Stage{{Duration: 10 * time.Second, Rate: 1000}, {Duration: 2 * time.Second, Rate: 1000}, {Duration: 10 * time.Second}})
	if r.total != 5000+2000+5000 {
		t.Fatalf("total = %g, want 12000", r.total)
	}
	near := func(got, want time.Duration, what string) {
		t.Helper()
		if d := got - want; d < -time.Microsecond || d > time.Microsecond {
			t.Errorf("%s: %v, want %v", what, got, want)
		}
	}
	for _, k := range []int64{0, 1, 2, 50, 1250, 4999} {
		near(r.at(k), time.Duration(math.Sqrt(float64(k)/50)*float64(time.Second)), "ramp up, send "+sendNo(k))
	}
	for _, k := range []int64{5000, 5001, 6999} {
		near(r.at(k), 10*time.Second+time.Duration(k-5000)*time.Millisecond, "flat, send "+sendNo(k))
	}
	// Ramp down: the m-th send from the end of it mirrors the ramp up.
	for _, m := range []int64{1, 50, 1250, 4999} {
		near(r.at(12000-m), 22*time.Second-time.Duration(math.Sqrt(float64(m)/50)*float64(time.Second)), "ramp down, send "+sendNo(12000-m))
	}
	if r.at(12000) != never {
		t.Errorf("send 12000 (after the last stage) at %v, want never", r.at(12000))
	}
	// Monotonic, and before() counts what a walk counts.
	prev := time.Duration(-1)
	walk := int64(0)
	checkAt := map[time.Duration]bool{time.Second: true, 5 * time.Second: true, 11 * time.Second: true, 21 * time.Second: true}
	for k := int64(0); k < 12000; k++ {
		at := r.at(k)
		if at < prev {
			t.Fatalf("send %d at %v, before send %d at %v", k, at, k-1, prev)
		}
		prev = at
		walk++
		for end := range checkAt {
			if at < end && r.at(k+1) >= end && r.before(end) != walk {
				t.Errorf("before(%v) = %d, the walk sent %d", end, r.before(end), walk)
			}
		}
	}
	// Per second, the sends follow the rate: second s of the ramp up
	// holds 50·((s+1)² − s²) sends, ±1 for the rounding at its edges.
	for s := 0; s < 10; s++ {
		got := r.before(time.Duration(s+1)*time.Second) - r.before(time.Duration(s)*time.Second)
		want := int64(50 * ((s+1)*(s+1) - s*s))
		if got < want-1 || got > want+1 {
			t.Errorf("second %d: %d sends, want %d", s, got, want)
		}
	}
}

func sendNo(k int64) string { return strconv.FormatInt(k, 10) }

func TestParseStage(t *testing.T) {
	if s, err := ParseStage("10s:2000"); err != nil || s != (Stage{Duration: 10 * time.Second, Rate: 2000}) {
		t.Errorf("ParseStage(10s:2000) = %+v, %v", s, err)
	}
	if s, err := ParseStage("10s:64c"); err != nil || s != (Stage{Duration: 10 * time.Second, Connections: 64, Closed: true}) {
		t.Errorf("ParseStage(10s:64c) = %+v, %v", s, err)
	}
	for in, want := range map[string]string{
		"10s":      "want DURATION:RATE",
		"10s:-1c":  "want a number of connections",
		"10s:xc":   "want a number of connections",
		"0s:100":   "must be more than 0",
		"ten:100":  "duration \"ten\"",
		"10s:-5":   "want a rate",
		"10s:fast": "want a rate",
		":100":     "want DURATION:RATE",
		"10s:":     "want DURATION:RATE",
	} {
		if _, err := ParseStage(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseStage(%q) error = %v, want %q", in, err, want)
		}
	}
	o := Options{Targets: []Target{{URL: "http://127.0.0.1:1/"}}, Stages: []Stage{{Duration: time.Second}}}
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "no stage reaches") {
		t.Errorf("a ramp that never sends: %v", err)
	}
	o = Options{Targets: []Target{{URL: "http://127.0.0.1:1/"}}, Stages: []Stage{{Duration: time.Second, Rate: 10}}, Duration: 5 * time.Second}
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "lasts their sum") {
		t.Errorf("a duration other than the stages': %v", err)
	}
}

// TestStagedLoadRamps: a load ramping from 0 to 400 req/s over 2 s, then
// flat for 1 s, against a fast server: its timeseries shows the ramp
// (each second more than the one before), every intended send is
// accounted for, and the count is the ramp's (200·2 + 400·1 = 800).
// Run under each engine with BENCHFLOW_LOAD_ENGINE.
func TestStagedLoadRamps(t *testing.T) {
	srv := slowServer(t, 0)
	res, err := Run(context.Background(), Options{
		Targets: []Target{{URL: srv.URL + "/"}}, Connections: 8, Threads: 1,
		Stages: []Stage{{Duration: 2 * time.Second, Rate: 400}, {Duration: time.Second, Rate: 400}},
	})
	if err != nil {
		t.Fatal(err)
	}
	checkAccounted(t, res, 800, 1)
	if res.Duration != 3*time.Second {
		t.Errorf("duration %v, want the stages' 3s", res.Duration)
	}
	var per []int64
	for _, iv := range res.Intervals {
		per = append(per, iv.Requests)
	}
	t.Logf("per second: %v", per)
	// The first second intends 100 sends, none of which can complete
	// before it is sent; the last intends 400. (A stall of the machine
	// moves completions between seconds, not the ramp's shape: the
	// schedule itself is TestRampFollowsTheStages'.)
	if len(per) < 3 || per[0] > 110 || per[0] >= per[len(per)-1] {
		t.Errorf("per-second requests %v, want the ramp (about 100, 300, 400)", per)
	}
}
