package results

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/benchflow/benchflow/engine/load"
	"github.com/benchflow/benchflow/engine/measure"
)

var t0 = time.Date(2026, 11, 30, 4, 45, 0, 0, time.UTC)

// synthResult builds a consistent load result: seconds one-second
// intervals whose requests add up to the total, with log-normal latencies
// around medianUS recorded both per interval and overall.
func synthResult(rng *rand.Rand, rps float64, medianUS float64, seconds int, samplesPerSec int) *measure.Record {
	res := &measure.Record{
		Started:     t0,
		Duration:    time.Duration(seconds) * time.Second,
		Latency:     hdrhistogram.New(1, 60_000_000, 3),
		Status:      map[int]int64{},
		ErrorsBy:    map[string]int64{},
		Connections: 16,
		Threads:     2,
		Engine:      load.EngineUring,
		Protocol:    measure.ProtoH2C,
		Streams:     4,
	}
	for s := 0; s < seconds; s++ {
		n := int64(rps * (1 + 0.01*rng.NormFloat64()))
		errs := int64(rng.IntN(3))
		iv := measure.Interval{Start: time.Duration(s) * time.Second, Requests: n, Errors: errs, Bytes: n * 850,
			Latency: hdrhistogram.New(1, 60_000_000, 3)}
		for i := 0; i < samplesPerSec; i++ {
			v := int64(medianUS * math.Exp(0.5*rng.NormFloat64()))
			if v < 1 {
				v = 1
			}
			iv.Latency.RecordValue(v)
			res.Latency.RecordValue(v)
		}
		res.Requests += n
		res.Errors += errs
		res.Bytes += iv.Bytes
		res.Status[200] += n - errs
		res.Status[503] += errs
		res.ErrorsBy["http"] += errs
		res.Intervals = append(res.Intervals, iv)
	}
	return res
}

// synthRecord is one trial of a 2-axis matrix.
func synthRecord(rng *rand.Rand, index int, deploy string, conns int64, rep int, rps float64) *TrialRecord {
	id := fmt.Sprintf("t%03d-%s-c%d-r%d", index, deploy, conns, rep)
	rec := &TrialRecord{
		TrialID: id, Index: index, Repetition: rep,
		Params:   []Param{{Name: "deploy", Value: deploy}, {Name: "connections", Value: conns}},
		Provider: "local.host", Status: StatusOK,
		StartedAt: t0.Add(time.Duration(index) * time.Minute), FinishedAt: t0.Add(time.Duration(index)*time.Minute + 40*time.Second),
		Steps: []StepRecord{
			{Name: "warm", Kind: "warm", Status: StatusOK, Result: synthResult(rng, rps/2, 300, 2, 50)},
			{Name: "wrk", Kind: "load", Status: StatusOK, Result: synthResult(rng, rps, 400, 10, 200)},
		},
		ServiceVersions: map[string]string{"nginx": "nginx/1.26.3"},
	}
	for s := 0; s < 3; s++ {
		rec.Processes = append(rec.Processes,
			ProcessSample{Step: "cpu", T: float64(s), Process: "nginx", PID: 100 + index, Role: "service", CPUPct: 80 + rng.Float64(), UserPct: 50, SystemPct: 30, RSSBytes: 4 << 20, Threads: 1, CtxSwitchesVoluntary: 10},
			ProcessSample{Step: "cpu", T: float64(s), Process: "docker-proxy", PID: 200 + index, Role: "infra", CPUPct: 40 + rng.Float64(), RSSBytes: 8 << 20, Threads: 8})
		rec.System = append(rec.System, SystemSample{Step: "cpu", T: float64(s), UserPct: 30, SystemPct: 20, IdlePct: 50})
		rec.Network = append(rec.Network, NetSample{Step: "cpu", T: float64(s), Interface: "lo", RxBytes: 1000, TxBytes: 1000, RxPackets: 10, TxPackets: 10})
	}
	return rec
}

// synthManifest is a manifest with the trials of synthRecords pending.
func synthManifest(runID string, recs []*TrialRecord) *Manifest {
	m := &Manifest{
		RunID:            runID,
		Pipeline:         PipelineInfo{Name: "deploy-overhead", File: "p.hcl", SHA256: "abc123", Format: "hcl", Variables: map[string]any{"duration": "10s", "n": 3}},
		BenchflowVersion: "test",
		StartedAt:        t0,
		Order:            "interleaved",
		Repetitions:      2,
		Matrix:           map[string]any{"deploy": []any{"host", "docker"}, "connections": []any{16, 64}},
		Axes:             []string{"deploy", "connections"},
		Environment:      map[string]any{"fingerprint": "fp-1", "kernel": "6.1"},
	}
	for _, r := range recs {
		m.Trials = append(m.Trials, TrialEntry{TrialID: r.TrialID, Index: r.Index, Repetition: r.Repetition})
	}
	return m
}

// synthRecords is a full 2×2 matrix × 2 repetitions, interleaved.
func synthRecords(seed uint64) []*TrialRecord {
	rng := rand.New(rand.NewPCG(seed, 1))
	var recs []*TrialRecord
	i := 0
	for rep := 1; rep <= 2; rep++ {
		for _, d := range []string{"host", "docker"} {
			for _, c := range []int64{16, 64} {
				rps := 1000.0
				if d == "docker" {
					rps = 600
				}
				recs = append(recs, synthRecord(rng, i, d, c, rep, rps))
				i++
			}
		}
	}
	return recs
}
