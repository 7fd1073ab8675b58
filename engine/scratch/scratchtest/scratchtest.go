// Package scratchtest simulates, for tests, the records a benchflow
// process killed mid-write leaves in a scratch journal.
package scratchtest

import (
	"os/exec"
	"testing"

	"github.com/benchflow/benchflow/engine/scratch"
	"github.com/benchflow/benchflow/providers"
)

// DeadOwner is the owner labels of a process of this machine that has
// ended (a child run to completion; its start time is not that of
// whatever may reuse its pid).
func DeadOwner(t testing.TB) map[string]string {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	o := providers.SelfOwner()
	o.PID, o.Start = cmd.Process.Pid, 1
	return o.Labels()
}

// RecordKilled records path in j as made by a process that has ended.
func RecordKilled(t testing.TB, j *scratch.Journal, path string, kind scratch.Kind) {
	t.Helper()
	if err := j.RecordFor(DeadOwner(t), path, kind, ""); err != nil {
		t.Fatal(err)
	}
}
