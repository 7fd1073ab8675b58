package agent

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/benchflow/benchflow/engine/measure"
)

// fillRecord sets every field of a record to a value no zero default can
// be mistaken for, field by field through reflection, so that a field
// added to measure.Record is filled here without anyone touching the test.
func fillRecord(t *testing.T) *measure.Record {
	t.Helper()
	hist := func(v int64) *hdrhistogram.Histogram {
		h := hdrhistogram.New(1, 60_000_000, 3)
		if err := h.RecordValue(v); err != nil {
			t.Fatal(err)
		}
		return h
	}
	rec := &measure.Record{}
	rv := reflect.ValueOf(rec).Elem()
	for i := 0; i < rv.NumField(); i++ {
		f, sf := rv.Field(i), rv.Type().Field(i)
		n := int64(i + 7)
		switch {
		case sf.Name == "Started":
			f.Set(reflect.ValueOf(time.Unix(1_800_000_000, 123).UTC()))
		case f.Type() == reflect.TypeFor[*hdrhistogram.Histogram]():
			f.Set(reflect.ValueOf(hist(100 * n)))
		case f.Type() == reflect.TypeFor[[]measure.Interval]():
			f.Set(reflect.ValueOf([]measure.Interval{{Start: time.Second, Duration: time.Second, Requests: n, Errors: 1, Bytes: 2 * n, Latency: hist(n)}}))
		case f.Type() == reflect.TypeFor[map[int]int64]():
			f.Set(reflect.ValueOf(map[int]int64{200: n}))
		case f.Type() == reflect.TypeFor[map[string]int64]():
			f.Set(reflect.ValueOf(map[string]int64{"read": n}))
		case f.Type() == reflect.TypeFor[map[string]string]():
			f.Set(reflect.ValueOf(map[string]string{"read": sf.Name}))
		case f.Type() == reflect.TypeFor[[]measure.ThresholdResult]():
			f.Set(reflect.ValueOf([]measure.ThresholdResult{{Expr: "p99<10ms", Value: float64(n), Unit: "us", OK: true, Text: sf.Name}}))
		case f.Type() == reflect.TypeFor[[]string]():
			f.Set(reflect.ValueOf([]string{"http://127.0.0.1:1/" + sf.Name}))
		case f.Kind() == reflect.Int64 || f.Kind() == reflect.Int:
			f.SetInt(n)
		case f.Kind() == reflect.Float64:
			f.SetFloat(float64(n) + 0.5)
		case f.Kind() == reflect.Bool:
			f.SetBool(true)
		case f.Kind() == reflect.String:
			f.SetString(sf.Name + " value")
		default:
			t.Fatalf("measure.Record.%s: this test does not know how to fill a %s; teach it", sf.Name, f.Type())
		}
	}
	return rec
}

// TestRecordTravelsWhole sends a record with every field set through the
// agent protocol (to the wire, JSON and back) and checks that each field
// arrives: a field of measure.Record that forgets its JSON tag, or that
// the wire's own encoding leaves out, fails here by name.
func TestRecordTravelsWhole(t *testing.T) {
	rec := fillRecord(t)
	w, err := resultToWire(3, rec, 0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(w)
	if err != nil {
		t.Fatal(err)
	}
	var back Result
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	got, err := back.LoadResult()
	if err != nil {
		t.Fatal(err)
	}
	if back.Index != 3 {
		t.Errorf("index %d, want 3", back.Index)
	}
	want, have := reflect.ValueOf(rec).Elem(), reflect.ValueOf(got).Elem()
	for i := 0; i < want.NumField(); i++ {
		name := want.Type().Field(i).Name
		if name == "Tag" {
			// The controller labels the merged result itself.
			if have.Field(i).String() != "" {
				t.Errorf("Tag travelled as %q; the controller sets it", have.Field(i).String())
			}
			continue
		}
		a, z := want.Field(i).Interface(), have.Field(i).Interface()
		switch x := a.(type) {
		case *hdrhistogram.Histogram:
			if y := z.(*hdrhistogram.Histogram); y == nil || !x.Equals(y) {
				t.Errorf("%s: the histogram did not arrive whole", name)
			}
			continue
		case []measure.Interval:
			y := z.([]measure.Interval)
			if len(y) != len(x) || y[0].Requests != x[0].Requests || y[0].Bytes != x[0].Bytes ||
				y[0].Start != x[0].Start || y[0].Duration != x[0].Duration || y[0].Latency == nil || !y[0].Latency.Equals(x[0].Latency) {
				t.Errorf("%s: %+v, want %+v", name, y, x)
			}
			continue
		}
		if !reflect.DeepEqual(a, z) {
			t.Errorf("%s: %v after the wire, want %v (a field of measure.Record without a JSON tag, or one the agent encoding leaves out)", name, z, a)
		}
	}
}
