package results

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/google/go-cmp/cmp"
)

func TestNewRunID(t *testing.T) {
	a := NewRunID(time.Date(2026, 11, 30, 4, 45, 0, 0, time.FixedZone("x", 3600)))
	if !strings.HasPrefix(a, "20261130T034500Z-") || len(a) != len("20261130T034500Z-3f9c") {
		t.Fatalf("NewRunID = %q", a)
	}
	b := NewRunID(time.Date(2026, 11, 30, 4, 45, 1, 0, time.UTC))
	if !(a < b) {
		t.Fatalf("ids do not sort by time: %q !< %q", a, b)
	}
}

// writeRun writes recs into a new run under out with a checked allocator.
func writeRun(t *testing.T, out, runID, format string, recs []*TrialRecord, mem memory.Allocator) *Writer {
	t.Helper()
	m := synthManifest(runID, recs)
	m.OutputFormat = format
	w, err := Create(out, m, []byte("pipeline \"x\" {}\n"), "study.hcl")
	if err != nil {
		t.Fatal(err)
	}
	w.mem = mem
	for _, r := range recs {
		if err := w.CommitTrial(r); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

func TestRoundTrip(t *testing.T) {
	for _, format := range []string{FormatParquet, FormatArrow} {
		t.Run(format, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			out := t.TempDir()
			recs := synthRecords(1)
			// Each trial's load opened 16+i connections (its first 16 and
			// i reconnects), i of them with accepted 0-RTT data.
			for i, rec := range recs {
				res := rec.Steps[1].Result
				res.Connect = hdrhistogram.New(1, 60_000_000, 3)
				for c := 0; c < 16+i; c++ {
					res.Connect.RecordValue(int64(100 + 10*c))
				}
				res.Used0RTT = int64(i)
				res.UDPRecvBuf, res.UDPSendBuf, res.UDPGSO = int64(212992+i), int64(425984+i), i%2 == 1
			}
			w := writeRun(t, out, "20261130T044500Z-aaaa", format, recs, mem)
			if err := w.Finish(RunOK, t0.Add(time.Hour)); err != nil {
				t.Fatal(err)
			}
			for _, tbl := range []string{TableTrials, TableLatency, TableTimeseries, TableProcesses, TableSystem, TableNetwork} {
				if _, err := os.Stat(filepath.Join(w.Dir(), TableFile(tbl, format))); err != nil {
					t.Errorf("table %s: %v", tbl, err)
				}
			}
			run, err := readRun(filepath.Join(out, "latest"), mem, ReadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if run.Format != format {
				t.Errorf("format = %q", run.Format)
			}
			if got, want := run.Axes, []string{"deploy", "connections"}; !cmp.Equal(got, want) {
				t.Errorf("axes = %v, want %v", got, want)
			}
			if got, want := len(run.Trials), 2*len(recs); got != want {
				t.Fatalf("trial rows = %d, want %d (load + warm per trial)", got, want)
			}
			if run.Manifest.Status != RunOK || run.Manifest.FinishedAt == nil {
				t.Errorf("manifest status %q finished %v", run.Manifest.Status, run.Manifest.FinishedAt)
			}
			for i, rec := range recs {
				row := run.Trials[2*i+1]
				if row.TrialID != rec.TrialID || row.Step != "wrk" || row.StepKind != "load" {
					t.Fatalf("row %d = %s/%s/%s", 2*i+1, row.TrialID, row.Step, row.StepKind)
				}
				res := rec.Steps[1].Result
				if row.Requests != res.Requests || row.RPS != res.RPS() || row.Errors != res.Errors {
					t.Errorf("%s: requests/rps/errors = %d/%v/%d, want %d/%v/%d", row.TrialID, row.Requests, row.RPS, row.Errors, res.Requests, res.RPS(), res.Errors)
				}
				if row.LatencyP99US != float64(res.Latency.ValueAtQuantile(99)) {
					t.Errorf("%s: p99 = %v", row.TrialID, row.LatencyP99US)
				}
				if d, ok := row.Param("deploy").(string); !ok || d != rec.Params[0].Value {
					t.Errorf("%s: param_deploy = %#v", row.TrialID, row.Param("deploy"))
				}
				if c, ok := row.Param("connections").(int64); !ok || c != rec.Params[1].Value {
					t.Errorf("%s: param_connections = %#v", row.TrialID, row.Param("connections"))
				}
				if row.Status2xx+row.Status5xx != res.Requests || row.ErrorsHTTP != res.Errors {
					t.Errorf("%s: status classes 2xx=%d 5xx=%d http errors=%d", row.TrialID, row.Status2xx, row.Status5xx, row.ErrorsHTTP)
				}
				if !row.StartedAt.Equal(res.Started) {
					t.Errorf("%s: started_at = %v", row.TrialID, row.StartedAt)
				}
				if row.ServiceVersions != `{"nginx":"nginx/1.26.3"}` {
					t.Errorf("service_versions = %q", row.ServiceVersions)
				}
				if row.LoadEngine != res.Engine || row.LoadEngine == "" {
					t.Errorf("%s: load_engine = %q, want %q", row.TrialID, row.LoadEngine, res.Engine)
				}
				if row.Connects != int64(16+i) || row.Used0RTT != int64(i) {
					t.Errorf("%s: connects/used_0rtt = %d/%d, want %d/%d", row.TrialID, row.Connects, row.Used0RTT, 16+i, i)
				}
				if row.UDPRecvBuf != int64(212992+i) || row.UDPSendBuf != int64(425984+i) || row.UDPGSO != (i%2 == 1) {
					t.Errorf("%s: udp_rcvbuf_bytes/udp_sndbuf_bytes/udp_gso = %d/%d/%v, want %d/%d/%v", row.TrialID, row.UDPRecvBuf, row.UDPSendBuf, row.UDPGSO, 212992+i, 425984+i, i%2 == 1)
				}
				if warm := run.Trials[2*i]; warm.Connects != 0 || warm.Used0RTT != 0 {
					t.Errorf("%s: warm step without a connect histogram has connects/used_0rtt %d/%d", warm.TrialID, warm.Connects, warm.Used0RTT)
				}
				if row.Protocol != "h2c" || row.Streams != 4 {
					t.Errorf("%s: protocol = %q streams %d, want h2c 4", row.TrialID, row.Protocol, row.Streams)
				}
				// The histogram read back gives the same percentiles as HDR.
				h := run.Histogram(rec.TrialID, "wrk")
				for _, q := range []float64{50, 90, 99, 99.9, 100} {
					if got, want := h.Percentile(q), float64(res.Latency.ValueAtQuantile(q)); got != want {
						t.Errorf("%s: p%v from buckets = %v, HDR = %v", rec.TrialID, q, got, want)
					}
				}
				if h.Total() != res.Latency.TotalCount() {
					t.Errorf("bucket total %d, want %d", h.Total(), res.Latency.TotalCount())
				}
			}
			if run.Latency[0].RunID != "20261130T044500Z-aaaa" || run.Timeseries[0].RunID != "20261130T044500Z-aaaa" || run.Latency[0].TrialID == "" {
				t.Errorf("keys of per-trial tables: %q %q %q", run.Latency[0].RunID, run.Timeseries[0].RunID, run.Latency[0].TrialID)
			}
			if got, want := len(run.Timeseries), len(recs)*(10+2); got != want {
				t.Errorf("timeseries rows = %d, want %d", got, want)
			}
			if got, want := len(run.Processes), len(recs)*6; got != want {
				t.Errorf("process rows = %d, want %d", got, want)
			}
			if len(run.System) != len(recs)*3 || len(run.Network) != len(recs)*3 {
				t.Errorf("system/network rows = %d/%d", len(run.System), len(run.Network))
			}
			src, err := os.ReadFile(filepath.Join(w.Dir(), "pipeline.hcl"))
			if err != nil || string(src) != "pipeline \"x\" {}\n" {
				t.Errorf("pipeline source = %q, %v", src, err)
			}
			assertNoTemp(t, out)
			assertNoTemp(t, w.Dir())
		})
	}
}

func assertNoTemp(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temporary file left behind: %s", filepath.Join(dir, e.Name()))
		}
	}
}

func TestSchemaVersionMetadata(t *testing.T) {
	out := t.TempDir()
	recs := synthRecords(2)[:1]
	w := writeRun(t, out, "20261130T044500Z-bbbb", FormatParquet, recs, memory.DefaultAllocator)
	check := func(path string) {
		t.Helper()
		r, err := file.OpenParquetFile(path, false)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		kv := r.MetaData().KeyValueMetadata()
		if v := kv.FindValue(MetadataKeySchemaVersion); v == nil || *v != SchemaVersion {
			t.Errorf("%s: %s = %v", path, MetadataKeySchemaVersion, v)
		}
		c, err := r.MetaData().RowGroup(0).ColumnChunk(0)
		if err != nil {
			t.Fatal(err)
		}
		if c.Compression().String() != "ZSTD" {
			t.Errorf("%s: compression = %v", path, c.Compression())
		}
	}
	tables := []string{TableTrials, TableLatency, TableTimeseries, TableProcesses}
	// The trial's part files while the run goes, the tables once it is
	// finished.
	for _, tbl := range tables {
		check(filepath.Join(w.Dir(), PartsDir, recs[0].TrialID, TableFile(tbl, FormatParquet)))
	}
	if err := w.Finish(RunOK, t0); err != nil {
		t.Fatal(err)
	}
	for _, tbl := range tables {
		check(filepath.Join(w.Dir(), TableFile(tbl, FormatParquet)))
	}
}

func TestManifestDuringRun(t *testing.T) {
	out := t.TempDir()
	recs := synthRecords(3)
	m := synthManifest("20261130T044500Z-cccc", recs)
	w, err := Create(out, m, []byte("x"), "s.star")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(w.Dir(), "pipeline.star")); err != nil {
		t.Errorf("pipeline.star: %v", err)
	}
	got, err := ReadManifest(w.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != RunRunning || got.SchemaVersion != SchemaVersion || got.FinishedAt != nil {
		t.Errorf("fresh manifest: status %q schema %q finished %v", got.Status, got.SchemaVersion, got.FinishedAt)
	}
	for _, tr := range got.Trials {
		if tr.Status != StatusPending {
			t.Errorf("trial %s status %q, want pending", tr.TrialID, tr.Status)
		}
	}
	failed := *recs[0]
	failed.Status, failed.Error, failed.Steps = StatusFailed, "provisioning \"nginx\": port busy", nil
	if err := w.CommitTrial(&failed); err != nil {
		t.Fatal(err)
	}
	got, _ = ReadManifest(w.Dir())
	if e := got.Trial(recs[0].TrialID); e == nil || e.Status != StatusFailed || e.Error == "" || got.Done(recs[0].TrialID) {
		t.Fatalf("failed trial entry = %+v", e)
	}
	// Committing again replaces the trial.
	if err := w.CommitTrial(recs[0]); err != nil {
		t.Fatal(err)
	}
	run, err := ReadRun(w.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Trials) != 2 || run.Trials[0].Status != StatusOK {
		t.Fatalf("after replacing: %d rows, status %q", len(run.Trials), run.Trials[0].Status)
	}
	if !run.Manifest.Done(recs[0].TrialID) {
		t.Error("replaced trial not done")
	}
	var raw map[string]any
	b, _ := os.ReadFile(filepath.Join(w.Dir(), "manifest.json"))
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"run_id", "pipeline", "benchflow_version", "started_at", "finished_at", "status", "order", "seed", "repetitions", "matrix", "environment", "output_format", "trials"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("manifest.json lacks %q", k)
		}
	}
	if err := w.Finish("weird", time.Now()); err == nil {
		t.Error("Finish accepted an unknown status")
	}
	if err := w.Finish(RunInterrupted, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := w.CommitTrial(recs[1]); err == nil {
		t.Error("CommitTrial after Finish succeeded")
	}
}

func TestLatestIsReplaced(t *testing.T) {
	out := t.TempDir()
	recs := synthRecords(4)[:1]
	for _, id := range []string{"20261130T044500Z-0001", "20261130T044600Z-0002"} {
		if _, err := Create(out, synthManifest(id, recs), nil, "p.hcl"); err != nil {
			t.Fatal(err)
		}
		target, err := os.Readlink(filepath.Join(out, "latest"))
		if err != nil || target != id {
			t.Fatalf("latest -> %q (%v), want %q", target, err, id)
		}
	}
	assertNoTemp(t, out)
}

func TestBadInput(t *testing.T) {
	out := t.TempDir()
	recs := synthRecords(5)
	cases := map[string]func() error{
		"nil manifest": func() error { _, err := Create(out, nil, nil, "p.hcl"); return err },
		"bad run id":   func() error { _, err := Create(out, &Manifest{RunID: "../x"}, nil, "p.hcl"); return err },
		"bad format": func() error {
			_, err := Create(out, &Manifest{RunID: "r1", OutputFormat: "csv"}, nil, "p.hcl")
			return err
		},
		"existing run": func() error {
			if _, err := Create(out, &Manifest{RunID: "r2"}, nil, "p.hcl"); err != nil {
				return nil
			}
			_, err := Create(out, &Manifest{RunID: "r2"}, nil, "p.hcl")
			return err
		},
		"resume missing": func() error { _, err := Resume(filepath.Join(out, "nope")); return err },
		"nil record": func() error {
			w, err := Create(out, &Manifest{RunID: "r3"}, nil, "p.hcl")
			if err != nil {
				return nil
			}
			return w.CommitTrial(nil)
		},
		"param type changes": func() error {
			w, err := Create(out, &Manifest{RunID: "r4"}, nil, "p.hcl")
			if err != nil {
				return nil
			}
			if err := w.CommitTrial(recs[0]); err != nil {
				return nil
			}
			r := *recs[1]
			r.Params = []Param{{Name: "connections", Value: "sixteen"}}
			return w.CommitTrial(&r)
		},
		"param unsupported type": func() error {
			w, err := Create(out, &Manifest{RunID: "r5"}, nil, "p.hcl")
			if err != nil {
				return nil
			}
			r := *recs[1]
			r.Params = []Param{{Name: "x", Value: []int{1}}}
			return w.CommitTrial(&r)
		},
		"corrupt manifest": func() error {
			d := filepath.Join(out, "corrupt")
			os.Mkdir(d, 0o755)
			os.WriteFile(filepath.Join(d, "manifest.json"), []byte("{"), 0o644)
			_, err := ReadRun(d)
			return err
		},
		"corrupt table": func() error {
			w, err := Create(out, &Manifest{RunID: "r6"}, nil, "p.hcl")
			if err != nil {
				return nil
			}
			os.WriteFile(filepath.Join(w.Dir(), "trials.parquet"), []byte("PAR1 not really"), 0o644)
			_, err = ReadRun(w.Dir())
			return err
		},
	}
	for name, f := range cases {
		t.Run(name, func(t *testing.T) {
			err := f()
			if err == nil {
				t.Fatal("no error")
			}
			t.Log(err)
		})
	}
}

func TestCheckResumable(t *testing.T) {
	m := synthManifest("r", nil)
	// Numbers read back from JSON are float64; ints still compare equal.
	b, _ := json.Marshal(m)
	var back Manifest
	json.Unmarshal(b, &back)
	if err := back.CheckResumable("abc123", map[string]any{"duration": "10s", "n": 3}); err != nil {
		t.Errorf("same pipeline: %v", err)
	}
	err := back.CheckResumable("abc123", map[string]any{"duration": "20s", "n": 3})
	if !errors.Is(err, ErrPipelineChanged) || !strings.Contains(err.Error(), "duration") {
		t.Errorf("changed variable: %v", err)
	}
	err = back.CheckResumable("def", map[string]any{"duration": "10s", "n": 3})
	if !errors.Is(err, ErrPipelineChanged) || !strings.Contains(err.Error(), "sha256") {
		t.Errorf("changed source: %v", err)
	}
}

// TestResumeAfterKill simulates a run killed after three trials: the
// Writer is dropped without Finish. Resume must see exactly the three
// trials, and finishing the run must give the same tables as a run that
// was never interrupted.
func TestResumeAfterKill(t *testing.T) {
	for _, format := range []string{FormatParquet, FormatArrow} {
		t.Run(format, func(t *testing.T) {
			recs := synthRecords(6)
			outA, outB := t.TempDir(), t.TempDir()
			full := writeRun(t, outA, "20261130T044500Z-full", format, recs, memory.DefaultAllocator)
			if err := full.Finish(RunOK, t0.Add(time.Hour)); err != nil {
				t.Fatal(err)
			}
			killed := writeRun(t, outB, "20261130T044500Z-kill", format, recs[:3], memory.DefaultAllocator)
			// The process dies here: no Finish (its lock on the run
			// folder ends with it).
			_ = killed.Close()
			partial, err := ReadRun(filepath.Join(outB, "latest"))
			if err != nil {
				t.Fatal(err)
			}
			if partial.Manifest.Status != RunRunning {
				t.Errorf("killed run status %q", partial.Manifest.Status)
			}
			if got := trialIDs(partial); !cmp.Equal(got, ids(recs[:3])) {
				t.Fatalf("after kill, trials = %v", got)
			}
			before, _ := os.ReadFile(filepath.Join(partial.Dir, "manifest.json"))
			w, err := Resume(partial.Dir)
			if err != nil {
				t.Fatal(err)
			}
			if after, _ := os.ReadFile(filepath.Join(partial.Dir, "manifest.json")); string(after) != string(before) {
				t.Error("Resume alone changed manifest.json")
			}
			var rest []*TrialRecord
			for _, r := range recs {
				if !w.Manifest().Done(r.TrialID) {
					rest = append(rest, r)
				}
			}
			if len(rest) != len(recs)-3 {
				t.Fatalf("resume would run %d trials, want %d", len(rest), len(recs)-3)
			}
			for _, r := range rest {
				if err := w.CommitTrial(r); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Finish(RunOK, t0.Add(time.Hour)); err != nil {
				t.Fatal(err)
			}
			a, err := ReadRun(full.Dir())
			if err != nil {
				t.Fatal(err)
			}
			b, err := ReadRun(w.Dir())
			if err != nil {
				t.Fatal(err)
			}
			if len(a.Trials) != len(b.Trials) || len(a.Latency) != len(b.Latency) || len(a.Timeseries) != len(b.Timeseries) || len(a.Processes) != len(b.Processes) {
				t.Fatalf("row counts differ: %d/%d/%d/%d vs %d/%d/%d/%d", len(a.Trials), len(a.Latency), len(a.Timeseries), len(a.Processes), len(b.Trials), len(b.Latency), len(b.Timeseries), len(b.Processes))
			}
			strip := func(rows []TrialRow) []TrialRow {
				out := append([]TrialRow(nil), rows...)
				for i := range out {
					out[i].RunID = ""
				}
				return out
			}
			if d := cmp.Diff(strip(a.Trials), strip(b.Trials)); d != "" {
				t.Errorf("trials differ (-full +resumed):\n%s", d)
			}
			if !cmp.Equal(trialIDs(a), trialIDs(b)) || !cmp.Equal(a.Axes, b.Axes) {
				t.Errorf("keys differ: %v %v / %v %v", trialIDs(a), a.Axes, trialIDs(b), b.Axes)
			}
			for _, e := range b.Manifest.Trials {
				if e.Status != StatusOK {
					t.Errorf("trial %s status %q after resume", e.TrialID, e.Status)
				}
			}
		})
	}
}

func ids(recs []*TrialRecord) []string {
	var out []string
	for _, r := range recs {
		out = append(out, r.TrialID)
	}
	return out
}

func trialIDs(r *Run) []string {
	var out []string
	for _, t := range r.Trials {
		if len(out) == 0 || out[len(out)-1] != t.TrialID {
			out = append(out, t.TrialID)
		}
	}
	return out
}

func TestWriteLoadFile(t *testing.T) {
	for _, ext := range []string{".parquet", ".arrow"} {
		t.Run(ext, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			dir := t.TempDir()
			recs := synthRecords(7)
			res := recs[0].Steps[1].Result
			path := filepath.Join(dir, "out"+ext)
			if err := writeLoadFile(mem, path, "", res); err != nil {
				t.Fatal(err)
			}
			format := FormatParquet
			if ext == ".arrow" {
				format = FormatArrow
			}
			tp, lp, sp := LoadFilePaths(path)
			tr, err := readTable(mem, tp, format, trialColumnsFor)
			if err != nil {
				t.Fatal(err)
			}
			if len(tr) != 1 || tr[0].Requests != res.Requests || tr[0].Step != "load" {
				t.Fatalf("trials row = %+v", tr)
			}
			lat, err := readTable(mem, lp, format, fixed(latencyColumns))
			if err != nil {
				t.Fatal(err)
			}
			var h Histogram
			for _, l := range lat {
				h = append(h, Bucket{l.LowerUS, l.UpperUS, l.Count})
			}
			if h.Percentile(99) != float64(res.Latency.ValueAtQuantile(99)) {
				t.Errorf("p99 from load file = %v", h.Percentile(99))
			}
			ts, err := readTable(mem, sp, format, fixed(timeseriesColumns))
			if err != nil || len(ts) != len(res.Intervals) {
				t.Fatalf("timeseries: %d rows, %v", len(ts), err)
			}
		})
	}
	if err := WriteLoadFile(filepath.Join(t.TempDir(), "x.parquet"), "s", nil); err == nil {
		t.Error("nil result accepted")
	}
}
