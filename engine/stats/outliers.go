package stats

import (
	"math"
	"sort"
)

// madThreshold is the outlier rule's cut-off in robust standard
// deviations: a sample is an outlier when |x − median| > 3.5 · 1.4826 ·
// MAD (Iglewicz and Hoaglin's modified z-score above 3.5). 1.4826 makes
// the MAD estimate the standard deviation of normal data.
const (
	madThreshold = 3.5
	madScale     = 1.4826
)

// minSamplesForOutliers: below 5 samples the MAD is too unstable to call
// anything an outlier (with 3 normal samples the rule would flag a quarter
// of the cells).
const minSamplesForOutliers = 5

// madSmallSample is Croux and Rousseeuw's (1992) finite-sample correction
// of the MAD for n < 10 (the MAD underestimates the spread of small
// samples); 1 from n = 10 on, where it is within 1% of n/(n−0.8).
func madSmallSample(n int) float64 {
	switch n {
	case 5:
		return 1.206
	case 6:
		return 1.200
	case 7:
		return 1.140
	case 8:
		return 1.129
	case 9:
		return 1.107
	}
	if n >= 10 {
		return float64(n) / (float64(n) - 0.8)
	}
	return 1
}

// Median of xs (NaN when empty); xs is not modified.
func Median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return quantileSorted(s, 0.5)
}

// MADOutliers reports, for each sample, whether it is an outlier by the
// median-absolute-deviation rule. Fewer than 3 samples, or a MAD of zero
// (half the samples equal), flag nothing: there is no robust spread to
// measure a distance with.
func MADOutliers(xs []float64) []bool {
	out := make([]bool, len(xs))
	if len(xs) < minSamplesForOutliers {
		return out
	}
	m := Median(xs)
	dev := make([]float64, len(xs))
	for i, x := range xs {
		dev[i] = math.Abs(x - m)
	}
	mad := Median(dev) * madSmallSample(len(xs))
	if !(mad > 0) {
		return out
	}
	for i, d := range dev {
		out[i] = d > madThreshold*madScale*mad
	}
	return out
}
