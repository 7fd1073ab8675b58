package k8s

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
)

// forwardLog receives what client-go's port-forwarder reports while it runs
// (through the klog logger of its context: "Error copying from local
// connection to remote stream", a reset connection when the load closes
// its connections, …). Without it client-go prints those lines on the
// console in the middle of a load. They go to a file in the trial's log
// folder; Teardown logs how many there were.
type forwardLog struct {
	path string // "" keeps only the count and the first line

	mu    sync.Mutex
	f     *os.File
	n     int
	first string
}

func newForwardLog(logDir, service string) *forwardLog {
	l := &forwardLog{}
	if logDir != "" {
		l.path = filepath.Join(logDir, service+".port-forward.log")
	}
	return l
}

// logger is the logr.Logger to put in the forwarder's context: errors and
// V(0) messages are recorded, the forwarder's debug output (V(1) and up) is
// dropped.
func (l *forwardLog) logger() logr.Logger {
	return funcr.New(func(prefix, args string) { l.write(strings.TrimSpace(prefix + " " + args)) }, funcr.Options{})
}

func (l *forwardLog) write(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n++
	if l.first == "" {
		l.first = line
	}
	if l.path == "" {
		return
	}
	if l.f == nil {
		f, err := os.OpenFile(l.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			l.path = ""
			return
		}
		l.f = f
	}
	fmt.Fprintf(l.f, "%s %s\n", time.Now().UTC().Format(time.RFC3339Nano), line)
}

// close ends the log and summarises it: "" when the forwarder reported
// nothing.
func (l *forwardLog) close() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f != nil {
		l.f.Close()
		l.f = nil
	}
	if l.n == 0 {
		return ""
	}
	s := fmt.Sprintf("the port-forward reported %d message(s) (usually the load closing its connections), first: %s", l.n, l.first)
	if l.path != "" {
		s += "; all in " + l.path
	}
	return s
}
