package results

import (
	"fmt"
	"math"
	"sort"

	"github.com/benchflow/benchflow/engine/measure"
)

// Steadiness thresholds of CheckSteady (docs/statistics.md, "Steady
// state").
const (
	// SteadyStallBelow: an interval whose req/s is below this fraction of
	// the load's median interval is a stall.
	SteadyStallBelow = 0.10
	// SteadyDriftMax: a linear trend of req/s that changes it by more than
	// this fraction of the mean over the load is a drift (when the trend is
	// also clear of the noise: |slope| > 4 standard errors).
	SteadyDriftMax = 0.10
	// steadyGap: a hole between consecutive intervals longer than this
	// fraction of the nominal interval is a gap.
	steadyGap = 0.5
	// Fewest full intervals for the stall and drift checks.
	steadyMinStall = 3
	steadyMinDrift = 5
)

// CheckSteady checks one load step's timeseries (its intervals, in any
// order) for a steady state: no gap between intervals, no stall (an
// interval with req/s below SteadyStallBelow of the median, while the
// load runs), no drift (a linear trend changing req/s by more than
// SteadyDriftMax over the load, fitted on the full intervals after the
// first). It returns steady and, when not steady, the reason in words;
// a step too short to check is steady with the reason "not checked: …".
func CheckSteady(rows []TimeseriesRow) (steady bool, reason string) {
	if len(rows) == 0 {
		return true, "not checked: no intervals"
	}
	rs := append([]TimeseriesRow(nil), rows...)
	sort.Slice(rs, func(i, j int) bool { return rs[i].TS < rs[j].TS })
	var lens []float64
	for _, r := range rs {
		if r.IntervalS > 0 {
			lens = append(lens, r.IntervalS)
		}
	}
	if len(lens) == 0 {
		return true, "not checked: no interval lengths"
	}
	sort.Float64s(lens)
	nominal := lens[len(lens)/2]
	for i := 0; i+1 < len(rs); i++ {
		end := rs[i].TS + rs[i].IntervalS
		if hole := rs[i+1].TS - end; hole > steadyGap*nominal {
			return false, fmt.Sprintf("gap: no interval from %.1f to %.1f s", end, rs[i+1].TS)
		}
	}
	var full []TimeseriesRow
	for _, r := range rs {
		if r.IntervalS >= 0.9*nominal {
			full = append(full, r)
		}
	}
	if len(full) < steadyMinStall {
		return true, fmt.Sprintf("not checked: %d full intervals (fewer than %d)", len(full), steadyMinStall)
	}
	rates := make([]float64, len(full))
	for i, r := range full {
		rates[i] = r.RPS
	}
	sorted := append([]float64(nil), rates...)
	sort.Float64s(sorted)
	med := sorted[len(sorted)/2]
	if len(sorted)%2 == 0 {
		med = (sorted[len(sorted)/2-1] + sorted[len(sorted)/2]) / 2
	}
	if !(med > 0) {
		return false, "stall: no requests completed in most intervals"
	}
	for i := 0; i < len(full); i++ {
		if full[i].RPS >= SteadyStallBelow*med {
			continue
		}
		j := i
		for j+1 < len(full) && full[j+1].RPS < SteadyStallBelow*med {
			j++
		}
		return false, fmt.Sprintf("stall: %d interval(s) below %.0f%% of the median req/s (%.0f), %.1f–%.1f s",
			j-i+1, 100*SteadyStallBelow, med, full[i].TS, full[j].TS+full[j].IntervalS)
	}
	fit := full[1:]
	if len(fit) < steadyMinDrift {
		return true, ""
	}
	var mt, my float64
	for _, r := range fit {
		mt += r.TS
		my += r.RPS
	}
	n := float64(len(fit))
	mt, my = mt/n, my/n
	var sxx, sxy float64
	for _, r := range fit {
		sxx += (r.TS - mt) * (r.TS - mt)
		sxy += (r.TS - mt) * (r.RPS - my)
	}
	if sxx == 0 || my <= 0 {
		return true, ""
	}
	slope := sxy / sxx
	var sse float64
	for _, r := range fit {
		e := r.RPS - (my + slope*(r.TS-mt))
		sse += e * e
	}
	se := math.Sqrt(sse / (n - 2) / sxx)
	span := fit[len(fit)-1].TS - fit[0].TS
	change := slope * span / my
	if math.Abs(change) > SteadyDriftMax && math.Abs(slope) > 4*se {
		dir := "rose"
		if change < 0 {
			dir = "fell"
		}
		return false, fmt.Sprintf("drift: req/s %s %.0f%% over %.1f s (linear fit, %.1f standard errors)", dir, 100*math.Abs(change), span, math.Abs(slope)/se)
	}
	return true, ""
}

// SteadyOf is CheckSteady on a load result's intervals (what the writer
// records for the step).
func SteadyOf(res *measure.Record) (steady bool, reason string) {
	if res == nil {
		return true, "not checked: no result"
	}
	return CheckSteady(timeseriesRows("", "", "", res))
}
