package report

import (
	"strings"
	"testing"
)

// TestTopProcessesPerHost: in a run sampled on several machines, the
// report lists each process with its host, and the same name on two hosts
// is two entries, never one sum.
func TestTopProcessesPerHost(t *testing.T) {
	run := writeSynthRun(t, t.TempDir(), runSpec{id: "20261130T044500Z-host", reps: 2, seed: 3, cells: []cellSpec{{
		deploy: "ssh", log: "off", rps: 1000, noise: 0.01, medianUS: 500,
		procs: map[string]float64{"nginx@10.0.0.2": 390, "benchflow-loader@client": 40, "nginx@client": 5},
	}}})
	s, err := Summarize(run, Options{TopProcesses: 5})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range s.Cells[0].Processes {
		got = append(got, p.Label())
	}
	want := "nginx@10.0.0.2, benchflow-loader@client, nginx@client"
	if strings.Join(got, ", ") != want {
		t.Errorf("top processes %v, want %s", got, want)
	}
	if p := s.Cells[0].Processes[0]; p.Host != "10.0.0.2" || p.Process != "nginx" || p.CPUPct < 389 || p.CPUPct > 391 {
		t.Errorf("first process %+v, want nginx of 10.0.0.2 at 390%%", p)
	}
}
