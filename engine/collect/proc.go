package collect

import (
	"bytes"
	"errors"
	"os"

	"golang.org/x/sys/unix"

	"github.com/benchflow/benchflow/engine/procfs"
)

// clockTicks is USER_HZ, the unit of the times in /proc/PID/stat and
// /proc/stat. It is 100 on every Linux architecture Go supports.
const clockTicks = 100

var pageSize = int64(os.Getpagesize())

// procStat is the part of /proc/PID/stat the sampler uses.
type procStat struct {
	comm  string
	utime uint64 // clock ticks, all threads
	stime uint64
	// cutime+cstime: CPU of the children this process waited for (their
	// whole lives), clock ticks.
	ctime     uint64
	threads   int64
	starttime uint64 // clock ticks after boot; with the pid, identifies a process
	ppid      int
	flags     uint64 // PF_* flags; pfKthread marks a kernel thread
	rssPages  int64  // resident set size in pages (0 when the line is short)
}

// pfKthread is the PF_KTHREAD bit of the flags field of /proc/PID/stat.
const pfKthread = 0x00200000

var errShort = procfs.ErrShort

// parseStat parses /proc/PID/stat (split by procfs.Split).
func parseStat(b []byte) (procStat, error) {
	var s procStat
	l, err := procfs.Split(b)
	if err != nil {
		return s, errShort
	}
	s.comm = l.Comm()
	if l.Fields() < 20 {
		return s, errShort
	}
	// stat(5) field numbers.
	if s.utime, err = l.Uint(14); err != nil {
		return s, err
	}
	if s.stime, err = l.Uint(15); err != nil {
		return s, err
	}
	cu, _ := l.Uint(16) // signed in the kernel's format; 0 if ever negative
	cs, _ := l.Uint(17)
	s.ctime = cu + cs
	th, err := l.Uint(20)
	if err != nil {
		return s, err
	}
	s.threads = int64(th)
	if s.starttime, err = l.Uint(22); err != nil {
		return s, err
	}
	pp, err := l.Uint(4)
	if err != nil {
		return s, err
	}
	s.ppid = int(pp)
	if s.flags, err = l.Uint(9); err != nil {
		return s, err
	}
	if l.Has(24) {
		rss, err := l.Uint(24)
		if err != nil {
			return s, err
		}
		s.rssPages = int64(rss)
	}
	return s, nil
}

func atou(b []byte) (uint64, error) { return procfs.Atou(b) }

// parseStatmRSS returns the resident set size in bytes from /proc/PID/statm.
func parseStatmRSS(b []byte) (int64, error) {
	v, err := procfs.StatmResident(b)
	return int64(v) * pageSize, err
}

// parseCtxSwitches returns voluntary and nonvoluntary context switches
// from a /proc/PID/status (or task status) file.
func parseCtxSwitches(b []byte) (vol, nonvol uint64, ok bool) {
	var gotV, gotN bool
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		line := b
		if i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		if v, found := bytes.CutPrefix(line, []byte("voluntary_ctxt_switches:")); found {
			vol, _ = atou(v)
			gotV = true
		} else if v, found := bytes.CutPrefix(line, []byte("nonvoluntary_ctxt_switches:")); found {
			nonvol, _ = atou(v)
			gotN = true
		}
	}
	return vol, nonvol, gotV && gotN
}

// cpuTimes is the aggregate "cpu" line of /proc/stat, in clock ticks.
type cpuTimes struct {
	user, nice, system, idle, iowait, irq, softirq, steal uint64
}

func (c cpuTimes) total() uint64 {
	// guest and guest_nice are already counted in user and nice.
	return c.user + c.nice + c.system + c.idle + c.iowait + c.irq + c.softirq + c.steal
}

// parseProcStat reads the first ("cpu ") line of /proc/stat.
func parseProcStat(b []byte) (cpuTimes, error) {
	var c cpuTimes
	i := bytes.IndexByte(b, '\n')
	if i >= 0 {
		b = b[:i]
	}
	f := bytes.Fields(b)
	if len(f) < 9 || string(f[0]) != "cpu" {
		return c, errors.New("unparsable /proc/stat")
	}
	dst := []*uint64{&c.user, &c.nice, &c.system, &c.idle, &c.iowait, &c.irq, &c.softirq, &c.steal}
	for k, p := range dst {
		v, err := atou(f[k+1])
		if err != nil {
			return c, err
		}
		*p = v
	}
	return c, nil
}

// countCPUs counts the per-CPU lines ("cpu0", "cpu1", …) of /proc/stat:
// the CPUs whose time the first line adds up.
func countCPUs(b []byte) int {
	n := 0
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		line := b
		if i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		if len(line) > 3 && string(line[:3]) == "cpu" && line[3] >= '0' && line[3] <= '9' {
			n++
		}
	}
	return n
}

// ifCounters are the counters of one interface from /proc/net/dev.
type ifCounters struct {
	rxBytes, rxPackets, txBytes, txPackets uint64
}

// parseNetDev parses /proc/net/dev into dst (cleared first).
func parseNetDev(b []byte, dst map[string]ifCounters) error {
	clear(dst)
	line := 0
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		l := b
		if i >= 0 {
			l, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		line++
		if line <= 2 || len(bytes.TrimSpace(l)) == 0 {
			continue // two header lines
		}
		c := bytes.IndexByte(l, ':')
		if c < 0 {
			return errors.New("unparsable /proc/net/dev line: " + string(l))
		}
		name := string(bytes.TrimSpace(l[:c]))
		f := bytes.Fields(l[c+1:])
		if len(f) < 10 {
			return errors.New("short /proc/net/dev line for " + name)
		}
		var v [4]uint64
		for k, idx := range []int{0, 1, 8, 9} {
			n, err := atou(f[idx])
			if err != nil {
				return err
			}
			v[k] = n
		}
		dst[name] = ifCounters{rxBytes: v[0], rxPackets: v[1], txBytes: v[2], txPackets: v[3]}
	}
	return nil
}

// reader reads small /proc files into a reused buffer. It uses the raw
// system calls (open, read, close): /proc files are not pollable, and the
// os.File machinery around them costs more than the read itself.
type reader struct{ buf []byte }

func (r *reader) read(path string) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	if r.buf == nil {
		r.buf = make([]byte, 8192)
	}
	n := 0
	for {
		m, err := unix.Read(fd, r.buf[n:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "read", Path: path, Err: err}
		}
		if m <= 0 {
			break
		}
		n += m
		if n == len(r.buf) {
			r.buf = append(r.buf, make([]byte, len(r.buf))...)
		}
	}
	return r.buf[:n], nil
}

func pidPath(pid int, name string) string {
	return procfs.Path(pid, name)
}
