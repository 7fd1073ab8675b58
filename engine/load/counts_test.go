package load

import "testing"

// TestAddCounts: counters and per-class maps add up; an error sample of a
// class r already has is kept, a new class's is taken.
func TestAddCounts(t *testing.T) {
	var r Result
	r.AddCounts(&Result{Requests: 3, Errors: 1, Bytes: 30, Reconnects: 1, Goaways: 2, LateSends: 2,
		Status: map[int]int64{200: 3}, ErrorsBy: map[string]int64{"read": 1}, ErrorSample: map[string]string{"read": "first"}})
	r.AddCounts(&Result{Requests: 2, Errors: 2, Bytes: 20, Goaways: 1, LateSends: 1,
		Status: map[int]int64{200: 1, 503: 1}, ErrorsBy: map[string]int64{"read": 1, "http": 1},
		ErrorSample: map[string]string{"read": "second", "http": "503"}})
	if r.Requests != 5 || r.Errors != 3 || r.Bytes != 50 || r.Reconnects != 1 || r.Goaways != 3 || r.LateSends != 3 {
		t.Errorf("counters %+v", r)
	}
	if r.Status[200] != 4 || r.Status[503] != 1 || r.ErrorsBy["read"] != 2 || r.ErrorsBy["http"] != 1 {
		t.Errorf("status %v errors %v", r.Status, r.ErrorsBy)
	}
	if r.ErrorSample["read"] != "first" || r.ErrorSample["http"] != "503" {
		t.Errorf("samples %v", r.ErrorSample)
	}
}
