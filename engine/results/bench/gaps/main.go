// Command gaps prints the gaps between consecutive trials of a run (the
// time from one trial's end to the next one's start, from manifest.json)
// as the median of the first and the last N trials, to show whether the
// per-trial overhead grows with the run. engine/results/bench/gaps.sh
// runs it on a run of short trials; docs/performance.md has the method.
//
//	go run ./engine/results/bench/gaps [-n 100] RUN
package main

import (
	"flag"
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/benchflow/benchflow/engine/results"
)

func main() {
	n := flag.Int("n", 100, "trials in each window")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: gaps [-n 100] RUN")
		os.Exit(2)
	}
	m, err := results.ReadManifest(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	trials := append([]results.TrialEntry(nil), m.Trials...)
	sort.Slice(trials, func(i, j int) bool { return trials[i].Index < trials[j].Index })
	var gaps []time.Duration
	for i := 1; i < len(trials); i++ {
		a, b := trials[i-1], trials[i]
		if a.FinishedAt == nil || b.StartedAt == nil {
			continue
		}
		gaps = append(gaps, b.StartedAt.Sub(*a.FinishedAt))
	}
	if len(gaps) < 2**n {
		fmt.Fprintf(os.Stderr, "%d gaps, fewer than two windows of %d\n", len(gaps), *n)
		os.Exit(1)
	}
	med := func(g []time.Duration) time.Duration {
		g = append([]time.Duration(nil), g...)
		sort.Slice(g, func(i, j int) bool { return g[i] < g[j] })
		return g[len(g)/2]
	}
	fmt.Printf("| trials | gaps | median gap, first %d | median gap, last %d | ratio |\n|---|---|---|---|---|\n", *n, *n)
	first, last := med(gaps[:*n]), med(gaps[len(gaps)-*n:])
	fmt.Printf("| %d | %d | %.1f ms | %.1f ms | %.2f |\n", len(trials), len(gaps),
		float64(first)/1e6, float64(last)/1e6, float64(last)/float64(first))
}
