package stats

import (
	"fmt"
	"math"
)

// Interval methods: how an Interval was computed (docs/statistics.md).
const (
	// MethodLogT: geometric mean with a Student-t interval on the logs
	// (mean ± t·s/√n of ln x, back-transformed). Needs 3 samples or more,
	// all positive.
	MethodLogT = "log-t"
	// MethodPairedLogT: ratio of two cells of one run, paired by round
	// (repetition number): t interval on the per-round log ratios.
	MethodPairedLogT = "paired log-t"
	// MethodWelchLogT: ratio of two independent samples (two runs): Welch
	// t interval on the difference of the mean logs.
	MethodWelchLogT = "welch log-t"
	// MethodRange: fewer than 3 samples (or a value ≤ 0): Low and High
	// are the smallest and largest sample, not a confidence interval.
	MethodRange = "range"
	// MethodNone: a single sample (or none): no bounds.
	MethodNone = "none"
)

// MinSamplesForCI is the smallest sample size given a t interval; below
// it the range is shown.
const MinSamplesForCI = 3

// Interval is an estimate with its 95% confidence interval, the method
// that computed it (Method* constants) and the number of samples (or pairs)
// it rests on. Low and High are NaN when there are no bounds (MethodNone);
// with MethodRange they are the sample minimum and maximum.
type Interval struct {
	Value  float64
	Low    float64
	High   float64
	Method string
	N      int
}

// HasCI reports whether the interval bounds are known (a confidence
// interval or, with MethodRange, the sample range).
func (i Interval) HasCI() bool { return !math.IsNaN(i.Low) && !math.IsNaN(i.High) }

// IsCI reports whether the bounds are a 95% confidence interval (not a
// range, not missing).
func (i Interval) IsCI() bool { return i.HasCI() && i.Method != MethodRange && i.Method != MethodNone }

// HalfWidth is the relative half-width of a confidence interval on the log
// scale, (ln High − ln Low)/2 — about ±x% of the estimate for small x; NaN
// when i is not a confidence interval.
func (i Interval) HalfWidth() float64 {
	if !i.IsCI() || i.Low <= 0 {
		return math.NaN()
	}
	return (math.Log(i.High) - math.Log(i.Low)) / 2
}

// MethodLabel names the interval's method for tables: "log-t", "min-max"
// (the bounds are the smallest and largest sample: fewer than 3), "n=1".
func (i Interval) MethodLabel() string {
	switch i.Method {
	case MethodRange:
		return "min-max"
	case MethodNone, "":
		return fmt.Sprintf("n=%d", i.N)
	}
	return i.Method
}

// NoCI is the estimate v of n samples without bounds (MethodNone).
func NoCI(v float64, n int) Interval {
	return Interval{Value: v, Low: math.NaN(), High: math.NaN(), Method: MethodNone, N: n}
}

// Mean is the arithmetic mean of xs (NaN when empty).
func Mean(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// variance is the sample variance (n-1).
func variance(xs []float64) float64 {
	if len(xs) < 2 {
		return math.NaN()
	}
	m := Mean(xs)
	s := 0.0
	for _, x := range xs {
		s += (x - m) * (x - m)
	}
	return s / float64(len(xs)-1)
}

func allPositive(xs []float64) bool {
	for _, x := range xs {
		if !(x > 0) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}

func logs(xs []float64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = math.Log(x)
	}
	return out
}

// MinMax is the smallest and the largest of xs (+Inf and -Inf when empty).
func MinMax(xs []float64) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, x := range xs {
		lo, hi = math.Min(lo, x), math.Max(hi, x)
	}
	return lo, hi
}

// GeoMean is the geometric mean of xs, or their arithmetic mean when one
// is not positive (logs are then ruled out, as in PositiveCI).
func GeoMean(xs []float64) float64 {
	if allPositive(xs) {
		return math.Exp(Mean(logs(xs)))
	}
	return Mean(xs)
}

// rangeOf is the estimate v with the sample range of xs as bounds.
func rangeOf(v float64, xs []float64) Interval {
	lo, hi := MinMax(xs)
	return Interval{Value: v, Low: lo, High: hi, Method: MethodRange, N: len(xs)}
}

// PositiveCI estimates a positive quantity (req/s, a latency) from its
// repetitions: the geometric mean with a 95% t interval computed on the
// logs and back-transformed (MethodLogT), so both bounds are positive and
// the interval is symmetric in ratio (×/÷). With fewer than 3 samples it
// gives the range instead (MethodRange), with one sample no bounds. A
// sample ≤ 0 (a repetition with no successful request) rules out logs: the
// estimate is then the arithmetic mean with the range.
func PositiveCI(xs []float64) Interval {
	n := len(xs)
	if n == 0 {
		return NoCI(math.NaN(), 0)
	}
	if !allPositive(xs) {
		if n == 1 {
			return NoCI(xs[0], 1)
		}
		return rangeOf(Mean(xs), xs)
	}
	ls := logs(xs)
	g := math.Exp(Mean(ls))
	switch {
	case n == 1:
		return NoCI(g, 1)
	case n < MinSamplesForCI:
		return rangeOf(g, xs)
	}
	h := TQuantile975(float64(n-1)) * math.Sqrt(variance(ls)/float64(n))
	m := Mean(ls)
	return Interval{Value: g, Low: math.Exp(m - h), High: math.Exp(m + h), Method: MethodLogT, N: n}
}

// PairedRatio is the ratio b/a of two cells measured in the same rounds:
// b[i] and a[i] come from round i. It is the geometric mean of the
// per-round ratios with a 95% t interval on the per-round log ratios
// (MethodPairedLogT): what the rounds share (machine drift, a noisy
// neighbour during round i) cancels. Fewer than 3 pairs give the range of
// the per-round ratios.
func PairedRatio(b, a []float64) Interval {
	n := min(len(a), len(b))
	if n == 0 {
		return NoCI(math.NaN(), 0)
	}
	rs := make([]float64, n)
	for i := range rs {
		rs[i] = b[i] / a[i]
	}
	if !allPositive(rs) {
		if n == 1 {
			return NoCI(rs[0], 1)
		}
		return rangeOf(Mean(b[:n])/Mean(a[:n]), rs)
	}
	iv := PositiveCI(rs)
	if iv.Method == MethodLogT {
		iv.Method = MethodPairedLogT
	}
	return iv
}

// WelchRatio is the ratio of the geometric means of two independent
// samples, b/a, with a 95% Welch t interval on the difference of the mean
// logs (Welch–Satterthwaite degrees of freedom; MethodWelchLogT). With
// fewer than 3 samples on a side it gives the range of all the ratios
// b[j]/a[i].
func WelchRatio(b, a []float64) Interval {
	if len(a) == 0 || len(b) == 0 {
		return NoCI(math.NaN(), 0)
	}
	n := min(len(a), len(b))
	if !allPositive(a) || !allPositive(b) || n < MinSamplesForCI {
		r := Mean(b) / Mean(a)
		if allPositive(a) && allPositive(b) {
			r = math.Exp(Mean(logs(b)) - Mean(logs(a)))
		}
		if len(a) == 1 && len(b) == 1 {
			return NoCI(r, 1)
		}
		alo, ahi := MinMax(a)
		blo, bhi := MinMax(b)
		lo, hi := blo/ahi, bhi/alo
		if !(alo > 0) {
			lo, hi = math.NaN(), math.NaN()
		}
		return Interval{Value: r, Low: lo, High: hi, Method: MethodRange, N: n}
	}
	la, lb := logs(a), logs(b)
	d := Mean(lb) - Mean(la)
	va := variance(la) / float64(len(a))
	vb := variance(lb) / float64(len(b))
	se := math.Sqrt(va + vb)
	r := math.Exp(d)
	if se == 0 {
		return Interval{Value: r, Low: r, High: r, Method: MethodWelchLogT, N: n}
	}
	df := (va + vb) * (va + vb) / (va*va/float64(len(a)-1) + vb*vb/float64(len(b)-1))
	h := TQuantile975(df) * se
	return Interval{Value: r, Low: math.Exp(d - h), High: math.Exp(d + h), Method: MethodWelchLogT, N: n}
}

func quantileSorted(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	pos := q * float64(len(xs)-1)
	lo := int(math.Floor(pos))
	hi := int(math.Ceil(pos))
	f := pos - float64(lo)
	return xs[lo]*(1-f) + xs[hi]*f
}

// TQuantile975 is the 0.975 quantile of Student's t with df degrees of
// freedom (df may be fractional), by bisection on the CDF.
func TQuantile975(df float64) float64 {
	if math.IsNaN(df) || df <= 0 {
		return math.NaN()
	}
	if df > 1e6 {
		return 1.959963984540054
	}
	lo, hi := 0.0, 1000.0
	for i := 0; i < 100; i++ {
		mid := (lo + hi) / 2
		if tCDF(mid, df) < 0.975 {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

// tCDF is the CDF of Student's t for t >= 0.
func tCDF(t, df float64) float64 {
	x := df / (df + t*t)
	return 1 - 0.5*regIncBeta(df/2, 0.5, x)
}

// regIncBeta is the regularized incomplete beta function I_x(a, b)
// (continued fraction, Lentz's method).
func regIncBeta(a, b, x float64) float64 {
	if x <= 0 {
		return 0
	}
	if x >= 1 {
		return 1
	}
	la, _ := math.Lgamma(a + b)
	lb, _ := math.Lgamma(a)
	lc, _ := math.Lgamma(b)
	front := math.Exp(la - lb - lc + a*math.Log(x) + b*math.Log(1-x))
	if x > (a+1)/(a+b+2) {
		return 1 - regIncBeta(b, a, 1-x)
	}
	const tiny = 1e-300
	f, c, d := 1.0, 1.0, 0.0
	for i := 0; i <= 300; i++ {
		m := float64(i / 2)
		var num float64
		switch {
		case i == 0:
			num = 1
		case i%2 == 0:
			num = m * (b - m) * x / ((a + 2*m - 1) * (a + 2*m))
		default:
			num = -(a + m) * (a + b + m) * x / ((a + 2*m) * (a + 2*m + 1))
		}
		d = 1 + num*d
		if math.Abs(d) < tiny {
			d = tiny
		}
		d = 1 / d
		c = 1 + num/c
		if math.Abs(c) < tiny {
			c = tiny
		}
		cd := c * d
		f *= cd
		if math.Abs(1-cd) < 1e-12 {
			break
		}
	}
	return front * (f - 1) / a
}

// RelativeHalfWidth is half the width of the 95% interval of positive
// samples xs (PositiveCI: log-t) divided by the estimate: 0.03 means
// "±3%". It is +Inf with fewer than 3 samples or a sample ≤ 0. Adaptive
// repetitions (engine/run) stop when every cell is below the precision.
func RelativeHalfWidth(xs []float64) float64 {
	iv := PositiveCI(xs)
	if !iv.IsCI() || !(iv.Value > 0) {
		return math.Inf(1)
	}
	return (iv.High - iv.Low) / (2 * iv.Value)
}
