package claims

import (
	"reflect"
	"testing"
)

// TestFromCollect: the claim metrics that need a collect step during the
// load are exactly the CPU ones.
func TestFromCollect(t *testing.T) {
	var got []string
	for _, m := range MetricNames() {
		if FromCollect(m) {
			got = append(got, m)
		}
	}
	want := []string{
		"cpu_idle_pct", "cpu_infra_pct", "cpu_infra_us_per_req", "cpu_kernel_pct", "cpu_loader_pct",
		"cpu_loader_us_per_req", "cpu_other_pct", "cpu_service_pct", "cpu_service_us_per_req",
		"cpu_stack_us_per_req", "cpu_steal_pct", "cpu_total_pct", "cpu_unattributed_pct",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("FromCollect holds for %q, want %q", got, want)
	}
	for _, m := range []string{"rps", "capacity_rps", "latency_p99_us", "errors"} {
		if FromCollect(m) {
			t.Errorf("FromCollect(%q) = true", m)
		}
	}
}
