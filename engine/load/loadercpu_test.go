package load

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/benchflow/benchflow/engine/measure"
)

// TestLoaderCPUIsReported: a load reports the CPU time its process used
// over the measured phase, and the summary, the JSON and CPUPerRequest
// derive the same per-request figure from it.
func TestLoaderCPUIsReported(t *testing.T) {
	s := okServer(t)
	res := run(t, Options{Targets: []Target{{URL: s.URL("/")}}, Connections: 4, Threads: 2, Requests: 2000})
	if res.LoaderCPU <= 0 {
		t.Fatalf("LoaderCPU = %v after 2000 requests, want the process's CPU time over the load", res.LoaderCPU)
	}
	if res.CPUPerRequest() != res.LoaderCPU/2000 {
		t.Errorf("CPUPerRequest = %v, want %v / 2000", res.CPUPerRequest(), res.LoaderCPU)
	}
	var b strings.Builder
	if err := WriteText(&b, res, false); err != nil {
		t.Fatal(err)
	}
	if want := strings.TrimSpace(fmtMicros(float64(res.CPUPerRequest().Nanoseconds())/1e3)) + " per request"; !strings.Contains(b.String(), "Loader CPU:") || !strings.Contains(b.String(), want) {
		t.Errorf("summary lacks %q:\n%s", want, b.String())
	}
	raw, err := json.Marshal(measure.ToJSON(res))
	if err != nil {
		t.Fatal(err)
	}
	var j struct {
		S     float64 `json:"loader_cpu_s"`
		PerUS float64 `json:"loader_cpu_us_per_req"`
	}
	if err := json.Unmarshal(raw, &j); err != nil {
		t.Fatal(err)
	}
	if j.S != res.LoaderCPU.Seconds() || j.PerUS != float64(res.CPUPerRequest().Nanoseconds())/1e3 {
		t.Errorf("JSON loader_cpu_s %v, loader_cpu_us_per_req %v; want %v and %v", j.S, j.PerUS, res.LoaderCPU.Seconds(), res.CPUPerRequest())
	}
	// Without a measurement (a result from elsewhere), nothing is printed.
	b.Reset()
	res.LoaderCPU = 0
	if err := WriteText(&b, res, false); err != nil || strings.Contains(b.String(), "Loader CPU") {
		t.Errorf("summary without LoaderCPU: %v\n%s", err, b.String())
	}
}
