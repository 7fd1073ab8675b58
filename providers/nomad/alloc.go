package nomad

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	napi "github.com/hashicorp/nomad/api"

	"github.com/benchflow/benchflow/providers"
)

// Task event types that follow a failure instead of explaining it: Nomad
// appends the restart policy's verdict ("Not Restarting: Policy allows no
// restarts"), the deployment's ("Alloc Unhealthy") and the kill to every
// failed task, so the last event is almost never the cause. Informational
// events (received, setup, started, driver progress) explain nothing
// either.
var consequenceEvents = map[string]bool{
	"Not Restarting": true, "Restarting": true, "Alloc Unhealthy": true,
	"Killing": true, "Killed": true, "Sibling Task Failed": true,
	"Received": true, "Task Setup": true, "Started": true,
	"Building Task Directory": true, "Downloading Artifacts": true,
	"Driver": true, "Task hook message": true, "Plugin became healthy": true,
	"Waiting for shutdown delay": true, "Skipping shutdown delay": true,
	"Restart Signaled": true, "Signaling": true, "Leader Task Dead": true,
	"Main Tasks Dead": true, "Reconnected": true,
}

// failureCause is the event that explains why a task failed.
type failureCause struct {
	task string
	ev   *napi.TaskEvent
}

// failureCauses returns, per task of an allocation (sorted by name), the
// last event that is not a consequence of the failure, or the last event
// when every one is. Tasks without events are skipped.
func failureCauses(states map[string]*napi.TaskState) []failureCause {
	var names []string
	for n := range states {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []failureCause
	var fallback []failureCause
	for _, n := range names {
		st := states[n]
		if st == nil || len(st.Events) == 0 {
			continue
		}
		var cause *napi.TaskEvent
		for i := len(st.Events) - 1; i >= 0 && cause == nil; i-- {
			if ev := st.Events[i]; ev != nil && !consequenceEvents[ev.Type] {
				cause = ev
			}
		}
		if cause == nil {
			fallback = append(fallback, failureCause{n, st.Events[len(st.Events)-1]})
			continue
		}
		// A failed task first: a healthy sibling's last event may be
		// "Terminated" with code 0 after it was killed.
		if st.Failed {
			out = append([]failureCause{{n, cause}}, out...)
		} else {
			out = append(out, failureCause{n, cause})
		}
	}
	if len(out) == 0 {
		return fallback
	}
	return out
}

// eventText is an event as `nomad alloc status` shows it: "Driver
// Failure: …", "Terminated: Exit Code: 3".
func eventText(ev *napi.TaskEvent) string {
	msg := ev.DisplayMessage
	if msg == "" {
		for _, s := range []string{ev.DriverError, ev.SetupError, ev.ValidationError, ev.DownloadError, ev.KillError, ev.Message} {
			if s != "" {
				msg = s
				break
			}
		}
	}
	if ev.Type == "Terminated" && msg == "" {
		msg = fmt.Sprintf("Exit Code: %d", ev.ExitCode)
	}
	if msg == "" {
		return ev.Type
	}
	return ev.Type + ": " + msg
}

// advice says what to do about a failure cause.
func advice(ev *napi.TaskEvent, driver string, logs bool) string {
	switch ev.Type {
	case "Driver Failure":
		if driver == "docker" {
			return "check that the image exists on the Nomad client (or can be pulled) and that its command runs"
		}
		return "check that the command exists and is executable on the Nomad client (the same path as on this host for benchflow.bin)"
	case "Terminated":
		if logs {
			return "the service exited by itself: see the stderr lines above; the trial's logs/ folder gets the whole output"
		}
		return "the service exited by itself: run its command by hand on the Nomad client to see why"
	case "Setup Failure", "Task hook failed", "Failed Artifact Download", "Failed Validation":
		return "the Nomad client could not prepare the task; `nomad alloc status <alloc>` shows every event"
	}
	return "`nomad alloc status <alloc>` shows every event"
}

// stderrTailBytes bounds how much of a failed task's stderr is read.
const stderrTailBytes = 4096

// stderrTailLines is how many of its last lines an error quotes.
const stderrTailLines = 5

// explainFailure describes a failed or lost allocation: the event that
// caused it, the last stderr lines of a task that exited, and what to do.
func (d *Deployment) explainFailure(ctx context.Context, a *napi.AllocationListStub) string {
	if a.ClientStatus == napi.AllocClientStatusLost {
		desc := a.ClientDescription
		if desc == "" {
			desc = "the allocation is lost"
		}
		return desc + " (its Nomad client stopped reporting: check `nomad node status`)"
	}
	causes := failureCauses(a.TaskStates)
	if len(causes) == 0 {
		desc := a.ClientDescription
		if desc == "" {
			desc = "no task events"
		}
		return desc
	}
	c := causes[0]
	var b strings.Builder
	fmt.Fprintf(&b, "task %q: %s", c.task, eventText(c.ev))
	var tail string
	if c.ev.Type == "Terminated" {
		tail = lastLines(d.readLog(ctx, a.ID, c.task, "stderr", stderrTailBytes), stderrTailLines)
		if tail != "" {
			fmt.Fprintf(&b, "; last stderr lines:\n    %s\n", strings.ReplaceAll(tail, "\n", "\n    "))
		}
	}
	hint := strings.ReplaceAll(advice(c.ev, d.p.s.Driver, tail != ""), "<alloc>", short(a.ID))
	if tail != "" {
		fmt.Fprintf(&b, "(%s)", hint)
	} else {
		fmt.Fprintf(&b, " (%s)", hint)
	}
	return b.String()
}

// readLog returns up to max bytes from the end of a task's stdout or
// stderr (GET /v1/client/fs/logs/:alloc?plain=true), or "" when Nomad
// cannot serve it.
func (d *Deployment) readLog(ctx context.Context, allocID, task, typ string, max int) string {
	q := url.Values{"task": {task}, "type": {typ}, "plain": {"true"}}
	if max > 0 {
		q.Set("origin", "end")
		q.Set("offset", fmt.Sprint(max))
	}
	rc, err := d.nomad.Raw().Response("/v1/client/fs/logs/"+allocID+"?"+q.Encode(), (&napi.QueryOptions{}).WithContext(ctx))
	if err != nil {
		return ""
	}
	defer rc.Close()
	limit := int64(max)
	if limit <= 0 {
		limit = maxLogBytes
	}
	b, _ := io.ReadAll(io.LimitReader(rc, limit))
	return string(b)
}

// lastLines returns the last n non-empty lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	var out []string
	for i := len(lines) - 1; i >= 0 && len(out) < n; i-- {
		if l := strings.TrimRight(lines[i], "\r "); l != "" {
			out = append([]string{l}, out...)
		}
	}
	return strings.Join(out, "\n")
}

// maxLogBytes bounds each log file copied into the trial's logs folder.
const maxLogBytes = 16 << 20

// saveLogs copies every allocation's task stdout and stderr, and its task
// events, into the trial's logs folder (see logBase). Nothing is
// written without a LogDir. Errors are logged, not returned: logs must
// never fail a teardown.
func (d *Deployment) saveLogs(ctx context.Context, allocs []*napi.AllocationListStub) {
	if d.logDir == "" || len(allocs) == 0 {
		return
	}
	if err := os.MkdirAll(d.logDir, 0o755); err != nil {
		d.logf("nomad: saving allocation logs: %v", err)
		return
	}
	for _, a := range allocs {
		if !d.ours(a) {
			continue // an earlier trial's allocation (same job id)
		}
		idx := allocIndex(a.Name)
		tasks := make([]string, 0, len(a.TaskStates))
		for t := range a.TaskStates {
			tasks = append(tasks, t)
		}
		sort.Strings(tasks)
		for _, t := range tasks {
			base := filepath.Join(d.logDir, d.logBase(idx, t))
			for _, typ := range []string{"stdout", "stderr"} {
				text := d.readLog(ctx, a.ID, t, typ, 0)
				if err := os.WriteFile(base+"."+typ+".log", []byte(text), 0o644); err != nil {
					d.logf("nomad: saving allocation logs: %v", err)
				}
			}
			var ev strings.Builder
			fmt.Fprintf(&ev, "allocation %s (%s), desired %s, client %s\n", a.ID, a.Name, a.DesiredStatus, a.ClientStatus)
			for _, e := range a.TaskStates[t].Events {
				fmt.Fprintf(&ev, "%s  %s\n", time.Unix(0, e.Time).UTC().Format(time.RFC3339Nano), eventText(e))
			}
			if err := os.WriteFile(base+".events.log", []byte(ev.String()), 0o644); err != nil {
				d.logf("nomad: saving allocation logs: %v", err)
			}
		}
	}
}

// logBase names an allocation's task logs (before .stdout.log, .stderr.log
// and .events.log): <service>.<alloc index>.<task> for a service
// ("web.0.web"); for load agents, whose job has one task, the name every
// provider gives an agent's logs, agent-<step>-<n> with n = alloc index + 1
// ("agent-wrk-1"), the agent's number in agents.parquet.
func (d *Deployment) logBase(idx, task string) string {
	if d.agentStep != "" {
		if i, err := strconv.Atoi(idx); err == nil {
			return providers.AgentName(d.agentStep, i)
		}
	}
	return fmt.Sprintf("%s.%s.%s", d.serviceName, idx, task)
}

// allocIndex is the index in an allocation name: "job.group[2]" → "2".
func allocIndex(name string) string {
	i, j := strings.LastIndexByte(name, '['), strings.LastIndexByte(name, ']')
	if i >= 0 && j > i {
		return name[i+1 : j]
	}
	return "0"
}
