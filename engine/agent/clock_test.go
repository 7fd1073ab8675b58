package agent

import (
	"testing"
	"time"
)

func TestSampleOffset(t *testing.T) {
	base := time.Unix(1_700_000_000, 0)
	// The agent's clock is 3s ahead; it read it 4ms into a 10ms round trip.
	s := Sample{Sent: base, Received: base.Add(10 * time.Millisecond), Agent: base.Add(3*time.Second + 4*time.Millisecond).UnixNano()}
	if got, want := s.Offset(), 3*time.Second-time.Millisecond; got != want {
		t.Errorf("Offset = %s, want %s", got, want)
	}
	if err := (s.Offset() - 3*time.Second).Abs(); err > s.RTT()/2 {
		t.Errorf("error %s exceeds the bound RTT/2 = %s", err, s.RTT()/2)
	}
}

func TestBestSampleKeepsSmallestRoundTrip(t *testing.T) {
	base := time.Unix(1_700_000_000, 0)
	mk := func(rtt time.Duration, agent time.Duration) Sample {
		return Sample{Sent: base, Received: base.Add(rtt), Agent: base.Add(agent).UnixNano()}
	}
	ss := []Sample{mk(9*time.Millisecond, time.Second), mk(200*time.Microsecond, 2*time.Second), mk(3*time.Millisecond, 5*time.Second)}
	best, ok := BestSample(ss)
	if !ok || best.RTT() != 200*time.Microsecond {
		t.Fatalf("BestSample = %+v (rtt %s), want the 200µs one", best, best.RTT())
	}
	if _, ok := BestSample(nil); ok {
		t.Error("BestSample(nil) reported a sample")
	}
}

func TestParseClockShift(t *testing.T) {
	for _, tc := range []struct {
		v     string
		index int
		want  time.Duration
		err   bool
	}{
		{"", 0, 0, false},
		{"90s", 3, 90 * time.Second, false},
		{"2=-1h,1=2s", 1, -time.Hour, false},
		{"2=-1h,1=2s", 0, 2 * time.Second, false},
		{"2=-1h", 2, 0, false},
		{"x=1s", 0, 0, true},
		{"2=soon", 1, 0, true},
	} {
		got, err := ParseClockShift(tc.v, tc.index)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("ParseClockShift(%q, %d) = %s, %v; want %s, error %v", tc.v, tc.index, got, err, tc.want, tc.err)
		}
	}
}
