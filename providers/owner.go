package providers

import (
	"github.com/benchflow/benchflow/engine/procfs"

	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// Labels naming the benchflow process that created an object. Every
// provider puts them (or the same keys in its backend's metadata: Nomad job
// meta, environment variables of a process) on what it creates, so gc
// without a run id can tell a run in progress from a crashed one.
const (
	LabelHost  = "dev.benchflow.host"  // hostname of the benchflow process
	LabelPID   = "dev.benchflow.pid"   // its pid
	LabelStart = "dev.benchflow.start" // its start time (clock ticks since boot, /proc/PID/stat field 22)
	LabelBoot  = "dev.benchflow.boot"  // the kernel's boot id, without dashes
)

// Owner identifies a benchflow process: a pid is only unique together with
// the process's start time and the boot it belongs to.
type Owner struct {
	Host  string
	PID   int
	Start uint64 // 0 when unknown (objects of older versions)
	Boot  string // "" when unknown
}

// OwnerState is what gc knows of an object's owner.
type OwnerState int

const (
	// OwnerGone: the owner ran on this machine and is no longer running, or
	// the object carries no owner at all: it is a leftover.
	OwnerGone OwnerState = iota
	// OwnerAlive: the owning process still runs on this machine.
	OwnerAlive
	// OwnerElsewhere: the owner ran on another host (or an earlier boot
	// cannot be told apart): nothing here can tell whether it still runs.
	OwnerElsewhere
)

func (s OwnerState) String() string {
	switch s {
	case OwnerAlive:
		return "alive"
	case OwnerElsewhere:
		return "elsewhere"
	}
	return "gone"
}

var self = sync.OnceValue(func() Owner {
	o := Owner{PID: os.Getpid(), Boot: bootID()}
	o.Host, _ = os.Hostname()
	if start, _, err := procStart(o.PID); err == nil {
		o.Start = start
	}
	return o
})

// SelfOwner is the owner of what this process creates.
func SelfOwner() Owner { return self() }

// Labels returns the owner as labels (the Label* keys), to merge into an
// object's labels or metadata. Values are valid Kubernetes label values.
func (o Owner) Labels() map[string]string {
	m := map[string]string{LabelPID: strconv.Itoa(o.PID)}
	if o.Host != "" {
		m[LabelHost] = labelSafe(o.Host)
	}
	if o.Start != 0 {
		m[LabelStart] = strconv.FormatUint(o.Start, 10)
	}
	if o.Boot != "" {
		m[LabelBoot] = o.Boot
	}
	return m
}

// AddOwnerLabels merges SelfOwner's labels into m.
func AddOwnerLabels(m map[string]string) {
	for k, v := range SelfOwner().Labels() {
		m[k] = v
	}
}

// OwnerFromLabels reads an owner back from labels; ok is false when the
// labels name none (an object of a version that did not record it).
func OwnerFromLabels(m map[string]string) (o Owner, ok bool) {
	pid, err := strconv.Atoi(m[LabelPID])
	if err != nil || pid <= 0 {
		return Owner{}, false
	}
	o = Owner{Host: m[LabelHost], PID: pid, Boot: m[LabelBoot]}
	if s := m[LabelStart]; s != "" {
		if o.Start, err = strconv.ParseUint(s, 10, 64); err != nil {
			return Owner{}, false
		}
	}
	return o, true
}

// State tells whether the owner still runs. A process on this host counts
// as alive when its pid runs and is not a zombie, with the same start time
// when one was recorded; an owner recorded under another boot id is gone.
func (o Owner) State() OwnerState {
	me := SelfOwner()
	if o.Host == "" || labelSafe(me.Host) != o.Host {
		return OwnerElsewhere
	}
	if o.Boot != "" && me.Boot != "" && o.Boot != me.Boot {
		return OwnerGone
	}
	start, state, err := procStart(o.PID)
	if err != nil || state == 'Z' || state == 'X' {
		return OwnerGone
	}
	if o.Start != 0 && start != o.Start {
		return OwnerGone // the pid was reused
	}
	return OwnerAlive
}

func (o Owner) String() string {
	return fmt.Sprintf("pid %d on %s", o.PID, o.Host)
}

// GCDecision says whether gc may remove an object with these labels and, if
// not, why. An explicit run id is the user's decision: what that run left is
// removed whoever owns it. Without one only objects whose owner is gone are.
func GCDecision(labels map[string]string, runID string) (remove bool, why string) {
	if runID != "" {
		return true, ""
	}
	o, ok := OwnerFromLabels(labels)
	if !ok {
		return true, ""
	}
	switch o.State() {
	case OwnerAlive:
		return false, fmt.Sprintf("its run %s is still running (%s)", labels[LabelRun], o)
	case OwnerElsewhere:
		return false, fmt.Sprintf("its run %s belongs to %s: name the run (--run %s) to remove it", labels[LabelRun], o, labels[LabelRun])
	}
	return true, ""
}

// GCRequest is what a provider type's GC receives.
type GCRequest struct {
	// RunID, when not empty, limits gc to what that run left, whoever owns
	// it. Empty means every managed object whose owner is gone.
	RunID string
	// Configs are the decoded configs (NewConfig's type) of the provider
	// blocks of this type in the pipeline being applied or named on the
	// command line, so gc reaches the same engine or cluster the run used.
	// Empty means the type's defaults (environment variables).
	Configs []any
	// Logf reports an object gc kept and why; nil means discard.
	Logf func(format string, args ...any)
}

// Keep reports a kept object through Logf.
func (r *GCRequest) Keep(object, why string) {
	if r != nil && r.Logf != nil {
		r.Logf("kept %s: %s", object, why)
	}
}

// procStart reads a process's start time and state from /proc/PID/stat.
func procStart(pid int) (start uint64, state byte, err error) {
	l, _, err := procfs.ReadStat(pid)
	if err != nil {
		if errors.Is(err, procfs.ErrNoName) {
			return 0, 0, errors.New("no command name")
		}
		return 0, 0, err
	}
	if l.Fields() < 20 || l.State() == 0 {
		return 0, 0, errors.New("too few fields")
	}
	start, err = strconv.ParseUint(string(l.Field(22)), 10, 64)
	return start, l.State(), err
}

func bootID() string {
	b, err := os.ReadFile(filepath.Join(procfs.Root, "sys/kernel/random/boot_id"))
	if err != nil {
		return ""
	}
	return strings.ReplaceAll(strings.TrimSpace(string(b)), "-", "")
}

// labelSafe maps a hostname to a valid label value (at most 63 of
// [A-Za-z0-9._-], starting and ending alphanumeric).
func labelSafe(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	if len(b) > 63 {
		b = b[:63]
	}
	return strings.Trim(string(b), "._-")
}
