package local

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/benchflow/benchflow/providers"
)

// tailLines is how many of the last output lines an ExitError quotes.
const tailLines = 10

// killWait bounds how long Teardown waits for the processes to disappear
// after SIGKILL (they only need to be scheduled once to die).
const killWait = 5 * time.Second

// Deployment is one running service process (and everything it started
// in its process group).
type Deployment struct {
	name        string
	stopTimeout time.Duration
	logf        func(string, ...any)
	endpoint    providers.Endpoint
	stdout      logFile
	stderr      logFile
	tmpLogDir   string // a log folder made because LogDir was empty

	cmd     *exec.Cmd
	pid     int
	done    chan struct{} // closed once the leader was reaped
	state   *os.ProcessState
	waitErr error

	teardown    sync.Once
	teardownErr error
}

// logFile is a service output file and where this run of it began (files
// are appended to, so a log folder shared by trials keeps every trial).
type logFile struct {
	path  string
	start int64
}

// PID is the process id of the service's leader, which is also its process
// group id.
func (d *Deployment) PID() int { return d.pid }

// LogPaths returns the stdout and stderr log files.
func (d *Deployment) LogPaths() (stdout, stderr string) { return d.stdout.path, d.stderr.path }

// Endpoint is 127.0.0.1 on the service's first port; Ports maps every port
// name to its host port; Attrs["pid"] is the leader's pid.
func (d *Deployment) Endpoint() providers.Endpoint { return d.endpoint }

// ExitError reports a service process that exited on its own.
type ExitError struct {
	Service string
	PID     int
	// Status is the exit status as Go prints it: "exit status 1",
	// "signal: killed".
	Status string
	// Code is the exit code, or -1 when a signal ended the process.
	Code int
	// Log is the file Tail comes from ("" when the service printed
	// nothing); Tail holds its last lines.
	Log  string
	Tail []string
}

func (e *ExitError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "service %q (pid %d) exited: %s", e.Service, e.PID, e.Status)
	if e.Code == 0 {
		b.WriteString("; a service must stay in the foreground: if the program daemonizes (forks into the background and exits), turn that off (nginx: -g 'daemon off;', apache2: -DFOREGROUND, redis: --daemonize no)")
	}
	if e.Log == "" {
		b.WriteString("; it printed nothing on stdout or stderr")
		return b.String()
	}
	fmt.Fprintf(&b, "; last lines of %s:", e.Log)
	for _, l := range e.Tail {
		b.WriteString("\n    ")
		b.WriteString(l)
	}
	return b.String()
}

// Alive returns nil while the service's leader process runs, and an
// *ExitError quoting its exit status and the last lines of its stderr (or
// of its stdout when stderr is empty) once it has exited.
func (d *Deployment) Alive(ctx context.Context) error {
	if d.cmd == nil {
		return fmt.Errorf("service %q was never started", d.name)
	}
	select {
	case <-d.done:
	default:
		return nil
	}
	e := &ExitError{Service: d.name, PID: d.pid, Status: "unknown status", Code: -1}
	if d.state != nil {
		e.Status = d.state.String()
		e.Code = d.state.ExitCode()
	} else if d.waitErr != nil {
		e.Status = d.waitErr.Error()
	}
	for _, f := range []logFile{d.stderr, d.stdout} {
		if lines := tail(f, tailLines); len(lines) > 0 {
			e.Log, e.Tail = f.path, lines
			break
		}
	}
	return e
}

// tail returns the last n non-empty lines written to f since this run
// began (reading at most the last 64 KiB).
func tail(f logFile, n int) []string {
	fh, err := os.Open(f.path)
	if err != nil {
		return nil
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return nil
	}
	from := max(f.start, st.Size()-64<<10)
	b, err := io.ReadAll(io.NewSectionReader(fh, from, st.Size()-from))
	if err != nil {
		return nil
	}
	var out []string
	for _, l := range bytes.Split(bytes.TrimRight(b, "\r\n"), []byte("\n")) {
		if s := strings.TrimRight(string(l), "\r"); strings.TrimSpace(s) != "" {
			out = append(out, s)
		}
	}
	if len(out) > n {
		out = out[len(out)-n:]
	}
	return out
}

// Processes returns the service's live processes: the leader (first) and
// every process of its process group, plus their descendants that moved to
// a group of their own. It is empty once everything has exited.
func (d *Deployment) Processes(ctx context.Context) ([]providers.Process, error) {
	if d.cmd == nil {
		return nil, nil
	}
	table, err := processTable()
	if err != nil {
		return nil, fmt.Errorf("listing processes of service %q: %w", d.name, err)
	}
	var out []providers.Process
	for _, p := range group(table, d.pid) {
		out = append(out, providers.Process{PID: p.pid, Name: p.comm, Role: "service"})
	}
	return out, nil
}

// Teardown stops the service: SIGTERM to its process group (and to its
// descendants outside it), a wait of up to stop_timeout for every process
// to exit, then SIGKILL. It also runs when the leader has already exited
// but its children remain. It is idempotent: later calls return the first
// result. When ctx ends before stop_timeout, SIGKILL is sent at once.
func (d *Deployment) Teardown(ctx context.Context) error {
	d.teardown.Do(func() {
		d.teardownErr = d.stop(ctx)
		d.removeTmp()
	})
	return d.teardownErr
}

func (d *Deployment) stop(ctx context.Context) error {
	if d.cmd == nil {
		return nil
	}
	select {
	case <-d.done:
		// The leader is gone; signal its group only while members remain
		// (an empty group's id may be reused).
		if len(d.left()) == 0 {
			return nil
		}
	default:
	}
	if d.signal(syscall.SIGTERM) == 0 {
		<-d.done // nothing left to signal; the leader is being reaped
		return nil
	}
	d.logf("stopping %s: SIGTERM to process group %d", d.name, d.pid)
	tctx, cancel := context.WithTimeout(ctx, d.stopTimeout)
	gone := d.waitGone(tctx)
	cancel()
	if gone {
		return nil
	}
	d.logf("stopping %s: still running %s after SIGTERM: SIGKILL", d.name, d.stopTimeout)
	d.signal(syscall.SIGKILL)
	kctx, cancel := context.WithTimeout(context.Background(), killWait)
	defer cancel()
	if d.waitGone(kctx) {
		return nil
	}
	left := d.left()
	return fmt.Errorf("stopping service %q: %d process(es) still running %s after SIGKILL: %s", d.name, len(left), killWait, strings.Join(left, ", "))
}

// signal sends sig to the process group and to every process of the
// service found outside it, and returns how many targets it reached.
func (d *Deployment) signal(sig syscall.Signal) int {
	n := 0
	if err := syscall.Kill(-d.pid, sig); err == nil {
		n++
	}
	if table, err := processTable(); err == nil {
		for _, p := range group(table, d.pid) {
			if p.pgid != d.pid && syscall.Kill(p.pid, sig) == nil {
				n++
			}
		}
	}
	return n
}

// waitGone polls until the leader was reaped and no process of the
// service is left, or ctx ends.
func (d *Deployment) waitGone(ctx context.Context) bool {
	wait := 2 * time.Millisecond
	for {
		select {
		case <-d.done:
			if len(d.left()) == 0 {
				return true
			}
		default:
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C:
		}
		wait = min(2*wait, 50*time.Millisecond)
	}
}

// left describes the live processes of the service.
func (d *Deployment) left() []string {
	table, err := processTable()
	if err != nil {
		return []string{err.Error()}
	}
	var out []string
	for _, p := range group(table, d.pid) {
		out = append(out, fmt.Sprintf("%d (%s)", p.pid, p.comm))
	}
	return out
}

// openLog opens (appending) the log file <dir>/<service><suffix> and
// records where this run starts in it.
func (d *Deployment) openLog(lf *logFile, dir, suffix string) (*os.File, error) {
	p := filepath.Join(dir, fileName(d.name)+suffix)
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening the log file: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("opening the log file: %w", err)
	}
	*lf = logFile{path: p, start: st.Size()}
	return f, nil
}

func (d *Deployment) removeTmp() {
	if d.tmpLogDir != "" {
		os.RemoveAll(d.tmpLogDir)
		d.tmpLogDir = ""
	}
}

// fileName makes a service name safe as a file name.
func fileName(s string) string {
	if s == "" {
		return "service"
	}
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '_'
	}, s)
}
