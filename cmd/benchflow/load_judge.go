package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/benchflow/benchflow/engine/measure"
)

// thresholdExit is the exit status of a load whose result fails a
// --threshold: k6's, so that CI scripts written for k6 read it alike.
const thresholdExit = 99

// judgeFlags are `benchflow load`'s pass/fail flags: --threshold.
type judgeFlags struct {
	exprs      []string
	thresholds []measure.Threshold
}

func (j *judgeFlags) register(f *pflag.FlagSet) {
	f.StringArrayVar(&j.exprs, "threshold", nil, "fail the load (exit status 99) unless its result meets `EXPR`: p99<10ms, mean<2ms, max<1s, rps>1000, errors<1%, missed==0 (repeatable; each is printed with its value)")
}

// parse reads the thresholds; a bad one is named by its flag and place.
func (j *judgeFlags) parse(findMax bool) error {
	if len(j.exprs) == 0 {
		return nil
	}
	if findMax {
		return errors.New("--threshold judges one load; a capacity search judges every probe by --slo")
	}
	for i, e := range j.exprs {
		t, err := measure.ParseThreshold(e)
		if err != nil {
			if len(j.exprs) > 1 {
				return fmt.Errorf("--threshold (%d of %d) %w", i+1, len(j.exprs), err)
			}
			return fmt.Errorf("--threshold %w", err)
		}
		j.thresholds = append(j.thresholds, t)
	}
	return nil
}

// judge records the thresholds' outcomes in res (printed with it) and
// returns the exit error naming the failed ones, or nil.
func (j *judgeFlags) judge(res *measure.Record) error {
	if len(j.thresholds) == 0 || res == nil {
		return nil
	}
	failed := measure.JudgeThresholds(j.thresholds, res)
	if len(failed) == 0 {
		return nil
	}
	var names []string
	for _, f := range failed {
		names = append(names, fmt.Sprintf("%s (was %s)", f.Expr, f.Text))
	}
	return &exitError{code: thresholdExit, err: fmt.Errorf("%d of %d thresholds failed: %s", len(failed), len(j.thresholds), strings.Join(names, ", "))}
}
