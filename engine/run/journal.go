package run

import (
	"github.com/benchflow/benchflow/engine/tune"
	"github.com/benchflow/benchflow/providers"
)

func init() {
	// Journal entries name this process the way provider objects do, so
	// gc tells a killed run's changes from a live one's.
	tune.JournalOwner = func() map[string]string { return providers.SelfOwner().Labels() }
}

// restoreJournals puts back the sysctls that killed runs changed (see
// tune.RestoreJournals): a journal is kept while its process runs, or when
// it was written on another host.
func restoreJournals() ([]string, error) {
	return tune.RestoreJournals(func(labels map[string]string) bool {
		o, ok := providers.OwnerFromLabels(labels)
		return ok && o.State() != providers.OwnerGone
	})
}
