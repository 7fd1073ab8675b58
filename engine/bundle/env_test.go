package bundle

import (
	"strings"
	"testing"

	"github.com/benchflow/benchflow/engine/results"
)

// TestDifferences: every recorded field that differs is listed (nested
// maps flattened, the service versions of the trials included), the noise
// fields and memory within the same GiB are not, and Docker's fields are
// marked as such.
func TestDifferences(t *testing.T) {
	a := &results.Manifest{Environment: map[string]any{
		"hostname": "a", "collected_at": "t1", "fingerprint": "f1", "cpu_freq_cur_mhz": 2100.0,
		"cpu_model": "AMD EPYC", "cpu_cores": 2.0, "memory_bytes": float64(8 << 30),
		"docker_storage_driver": "overlay2", "tools": map[string]any{"nginx": "1.22", "wrk": "4.2"},
		"cpu_vulnerabilities": map[string]any{"meltdown": "Not affected"},
	}, Trials: []results.TrialEntry{{Services: []results.ServiceEntry{{Type: "k8s", Versions: map[string]string{"server": "1.31"}}}}}}
	b := &results.Manifest{Environment: map[string]any{
		"hostname": "b", "collected_at": "t2", "fingerprint": "f2", "cpu_freq_cur_mhz": 3000.0,
		"cpu_model": "Intel Xeon", "cpu_cores": 2.0, "memory_bytes": float64(8<<30 - 5<<20),
		"docker_storage_driver": "fuse-overlayfs", "tools": map[string]any{"nginx": "1.26", "wrk": "4.2"},
		"cpu_vulnerabilities": map[string]any{"meltdown": "Mitigation: PTI"},
	}, Trials: []results.TrialEntry{{Services: []results.ServiceEntry{{Type: "k8s", Versions: map[string]string{"server": "1.32"}}}}}}
	var got []string
	docker := map[string]bool{}
	for _, d := range Differences(a, b) {
		got = append(got, d.String())
		docker[d.Field] = d.Docker
	}
	want := []string{
		"cpu_model: AMD EPYC → Intel Xeon",
		"cpu_vulnerabilities.meltdown: Not affected → Mitigation: PTI",
		"docker_storage_driver: overlay2 → fuse-overlayfs",
		"services.k8s.server: 1.31 → 1.32",
		"tools.nginx: 1.22 → 1.26",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("differences:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !docker["docker_storage_driver"] || docker["cpu_model"] {
		t.Errorf("docker marks: %v", docker)
	}
}
