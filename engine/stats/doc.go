// Package stats holds the statistics of benchflow's numbers, on plain
// samples: the 95% interval of a positive quantity from its repetitions
// (PositiveCI: a Student-t interval on the logs), the ratio of two cells
// paired by round (PairedRatio) or of two independent samples
// (WelchRatio), the t quantile they rest on (TQuantile975), the relative
// half-width adaptive repetitions stop on (RelativeHalfWidth), and the
// MAD outlier rule (MADOutliers). docs/statistics.md explains each.
//
// engine/report computes a run's cells and comparisons with them and
// engine/claims judges a claim's interval against its bound; the package
// imports only the standard library, so every layer may use it.
package stats
