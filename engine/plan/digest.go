package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sort"
)

// StudySHA256 is the sha256 of what the plan would run, independent of the
// front end that wrote it: the JSON plan (`plan --json`) of the first
// repetition, without the seed and the number of repetitions. An HCL
// pipeline and its Starlark twin have the same; two runs of one pipeline
// with --repetitions 3 and 5 too. compare uses it to tell whether two runs
// ran the same study.
func (p *Plan) StudySHA256() string {
	jp := p.JSON()
	jp.Seed, jp.Repetitions, jp.Adaptive = 0, 0, nil
	first := jp.Trials[:0:0]
	for _, t := range jp.Trials {
		if t.Repetition == 1 {
			t.Index = 0
			first = append(first, t)
		}
	}
	sort.SliceStable(first, func(i, j int) bool { return first[i].Cell < first[j].Cell })
	jp.Trials = first
	b, err := json.Marshal(jp)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
