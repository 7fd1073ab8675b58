package collect

import (
	"fmt"
	"testing"

	"github.com/benchflow/benchflow/engine/results"
	"github.com/google/go-cmp/cmp"
)

func TestSummary(t *testing.T) {
	ps := []results.ProcessSample{
		{Step: "cpu", T: 1, Process: "nginx", PID: 10, Role: "named", CPUPct: 40, UserPct: 30, SystemPct: 10, RSSBytes: 100},
		{Step: "cpu", T: 1, Process: "nginx", PID: 11, Role: "named", CPUPct: 50, UserPct: 20, SystemPct: 30, RSSBytes: 200},
		{Step: "cpu", T: 2, Process: "nginx", PID: 10, Role: "named", CPUPct: 60, UserPct: 40, SystemPct: 20, RSSBytes: 100},
		{Step: "cpu", T: 2, Process: "nginx", PID: 11, Role: "named", CPUPct: 50, UserPct: 20, SystemPct: 30, RSSBytes: 400},
		{Step: "cpu", T: 1, Process: "docker-proxy", PID: 20, Role: "infra", CPUPct: 120, UserPct: 20, SystemPct: 100, RSSBytes: 50},
		{Step: "cpu", T: 2, Process: "dockerd", PID: 30, Role: "infra", CPUPct: 8.3, UserPct: 8.3},
		{Step: "a-first", T: 1, Process: "benchflow", PID: 1, Role: "loader", CPUPct: 5},
		{Step: "a-first", T: 1, Process: "benchflow", PID: 4242, Role: "other", CPUPct: 60},
		{Step: "a-first", T: 1, Process: "benchflow", PID: 4243, Role: "other", CPUPct: 2},
	}
	want := []ProcessCPU{
		{Step: "a-first", Process: "benchflow", Role: "other", PIDs: 2, Samples: 1, CPUPct: 62, MaxCPUPct: 62},
		{Step: "a-first", Process: "benchflow", Role: "loader", PIDs: 1, Samples: 1, CPUPct: 5, MaxCPUPct: 5},
		{Step: "cpu", Process: "docker-proxy", Role: "infra", PIDs: 1, Samples: 1, CPUPct: 120, UserPct: 20, SystemPct: 100, MaxCPUPct: 120, RSSBytes: 50},
		{Step: "cpu", Process: "nginx", Role: "named", PIDs: 2, Samples: 2, CPUPct: 100, UserPct: 55, SystemPct: 45, MaxCPUPct: 110, RSSBytes: 500},
		{Step: "cpu", Process: "dockerd", Role: "infra", PIDs: 1, Samples: 1, CPUPct: 8.3, UserPct: 8.3, MaxCPUPct: 8.3},
	}
	got := Summary(ps)
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Summary (-want +got):\n%s", d)
	}
	if s := FormatSummary(got[2:]); s != "docker-proxy 120%, nginx 100%, dockerd 8.3%" {
		t.Errorf("FormatSummary = %q", s)
	}
	if len(Summary(nil)) != 0 || FormatSummary(nil) != "" {
		t.Error("empty input gives output")
	}
}

func ExampleFormatSummary() {
	s := Summary([]results.ProcessSample{
		{T: 1, Process: "nginx", PID: 7, CPUPct: 90},
		{T: 2, Process: "nginx", PID: 7, CPUPct: 102},
		{T: 1, Process: "docker-proxy", PID: 9, CPUPct: 118.6},
		{T: 2, Process: "docker-proxy", PID: 9, CPUPct: 121.4},
	})
	fmt.Println(FormatSummary(s))
	// Output: docker-proxy 120%, nginx 96%
}
