package report

import (
	"math"
	"math/rand/v2"
	"sort"
)

// Interval is an estimate with a 95% confidence interval. Low and High are
// NaN when there is no interval (fewer than two samples).
type Interval struct {
	Value float64
	Low   float64
	High  float64
}

// HasCI reports whether the interval bounds are known.
func (i Interval) HasCI() bool { return !math.IsNaN(i.Low) && !math.IsNaN(i.High) }

func noCI(v float64) Interval { return Interval{Value: v, Low: math.NaN(), High: math.NaN()} }

func mean(xs []float64) float64 {
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
	m := mean(xs)
	s := 0.0
	for _, x := range xs {
		s += (x - m) * (x - m)
	}
	return s / float64(len(xs)-1)
}

// meanCI is the mean with a 95% Student-t confidence interval.
func meanCI(xs []float64) Interval {
	m := mean(xs)
	n := len(xs)
	if n < 2 {
		return noCI(m)
	}
	h := tQuantile975(float64(n-1)) * math.Sqrt(variance(xs)/float64(n))
	return Interval{Value: m, Low: m - h, High: m + h}
}

// ratioCI is mean(b)/mean(a) with a 95% interval from the delta method on
// the log ratio with Welch–Satterthwaite degrees of freedom. Both samples
// need two values or more for an interval.
func ratioCI(b, a []float64) Interval {
	mb, ma := mean(b), mean(a)
	r := mb / ma
	if len(a) < 2 || len(b) < 2 || ma <= 0 || mb <= 0 {
		return noCI(r)
	}
	va := variance(a) / (float64(len(a)) * ma * ma)
	vb := variance(b) / (float64(len(b)) * mb * mb)
	se := math.Sqrt(va + vb)
	if se == 0 {
		return Interval{Value: r, Low: r, High: r}
	}
	df := (va + vb) * (va + vb) / (va*va/float64(len(a)-1) + vb*vb/float64(len(b)-1))
	h := tQuantile975(df) * se
	return Interval{Value: r, Low: r * math.Exp(-h), High: r * math.Exp(h)}
}

// bootstrapRatio is mean(b)/mean(a) with a 95% "expanded percentile"
// bootstrap interval from resamples resamplings of both samples (seeded:
// the result is reproducible). A plain percentile bootstrap is too narrow
// for the handful of repetitions benchmarks have (about 10% false
// positives with 5 per side); the expanded percentile interval
// (Hesterberg 2015, "What teachers should know about the bootstrap")
// widens the percentiles to α'/2 = Φ(−√(n/(n−1))·t(α/2, n−1)), with n the
// smaller sample size, which brings the error rate back near 5%.
func bootstrapRatio(b, a []float64, resamples int, seed uint64) Interval {
	r := mean(b) / mean(a)
	if len(a) < 2 || len(b) < 2 {
		return noCI(r)
	}
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	rs := make([]float64, resamples)
	for i := range rs {
		var sa, sb float64
		for range a {
			sa += a[rng.IntN(len(a))]
		}
		for range b {
			sb += b[rng.IntN(len(b))]
		}
		rs[i] = (sb / float64(len(b))) / (sa / float64(len(a)))
	}
	sort.Float64s(rs)
	n := float64(min(len(a), len(b)))
	tail := 0.5 * math.Erfc(math.Sqrt(n/(n-1))*tQuantile975(n-1)/math.Sqrt2)
	return Interval{Value: r, Low: quantileSorted(rs, tail), High: quantileSorted(rs, 1-tail)}
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

// tQuantile975 is the 0.975 quantile of Student's t with df degrees of
// freedom (df may be fractional), by bisection on the CDF.
func tQuantile975(df float64) float64 {
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
