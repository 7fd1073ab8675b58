package run

import (
	"github.com/benchflow/benchflow/engine/tune"
	"github.com/benchflow/benchflow/providers"
)

// journalOwner labels the tune journal's entries the way provider objects
// are labelled (tune.Settings.Owner), so gc tells a killed run's changes
// from a live one's, and a tune step refuses a sysctl another live run has
// changed.
func journalOwner() map[string]string { return providers.SelfOwner().Labels() }

// journalAlive: a journal's process still runs, or ran on another host.
func journalAlive(labels map[string]string) bool {
	o, ok := providers.OwnerFromLabels(labels)
	return ok && o.State() != providers.OwnerGone
}

// restoreJournals puts back the sysctls that killed runs changed (see
// tune.RestoreJournals): a journal is kept while its process runs, or when
// it was written on another host.
func restoreJournals() ([]string, error) {
	return tune.RestoreJournals(journalAlive)
}
