package ssh

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/benchflow/benchflow/engine/envinfo"
	"github.com/benchflow/benchflow/engine/procfs"
)

// Markers on every process the helper starts (the local provider's names,
// so a look at /proc tells the same story on every host), and the helper's
// own.
const (
	EnvRun     = "BENCHFLOW_RUN"
	EnvTrial   = "BENCHFLOW_TRIAL"
	EnvService = "BENCHFLOW_SERVICE"
	// EnvOwner is the "pid:start" of the helper that started the process,
	// as the local provider records its own benchflow: so gc on the host
	// itself (a local run's) tells a live service from a leftover, and
	// the ssh provider's gc finds one whose helper is gone.
	EnvOwner = "BENCHFLOW_OWNER"
	// EnvController names the benchflow driving the helper ("host/pid/
	// start/boot", ownerString).
	EnvController = "BENCHFLOW_CONTROLLER"
)

// runFolderPrefix starts the name of every per-run folder; ownerFile in it
// records who made it.
const (
	runFolderPrefix = "benchflow-run-"
	ownerFile       = ".benchflow-owner"
)

// HelperOptions configure Serve.
type HelperOptions struct {
	// Owner is the controller's identity (ownerString), recorded on what
	// the helper makes.
	Owner string
	// Idle is how long the helper waits without a request before it
	// stops everything it started and exits (a cut link); 0 means never.
	Idle time.Duration
}

// Serve runs the remote helper: it answers the requests read from in on
// out until in ends, the idle time passes or ctx ends, then stops every
// process it started and removes every folder it made.
func Serve(ctx context.Context, in io.Reader, out io.Writer, o HelperOptions) error {
	// Once the session is gone a write to stdout fails; it must not kill
	// the helper (Go exits on SIGPIPE from fd 1) before it has cleaned up.
	signal.Ignore(syscall.SIGPIPE)
	h := &helper{out: json.NewEncoder(out), owner: o.Owner, procs: map[int]*child{}, folders: map[string]bool{}}
	h.self = selfOwner()
	defer h.cleanup()
	lines := make(chan []byte)
	readErr := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(in)
		sc.Buffer(make([]byte, 64<<10), 256<<20)
		for sc.Scan() {
			lines <- append([]byte(nil), sc.Bytes()...)
		}
		readErr <- sc.Err()
	}()
	var idle <-chan time.Time
	var timer *time.Timer
	if o.Idle > 0 {
		timer = time.NewTimer(o.Idle)
		idle = timer.C
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-idle:
			return fmt.Errorf("no word from benchflow for %s: stopping what it started", o.Idle)
		case err := <-readErr:
			return err
		case l := <-lines:
			if timer != nil {
				timer.Reset(o.Idle)
			}
			var req request
			if err := json.Unmarshal(l, &req); err != nil {
				h.send(response{Error: "bad request: " + err.Error()})
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				resp := h.handle(ctx, &req)
				resp.ID = req.ID
				h.send(resp)
			}()
		}
	}
}

type helper struct {
	outMu sync.Mutex
	out   *json.Encoder
	owner string
	self  string

	mu       sync.Mutex
	procs    map[int]*child
	folders  map[string]bool
	samplers map[int]*sampling // collect.go
	nextSamp int
}

// child is a process the helper started.
type child struct {
	cmd    *exec.Cmd
	done   chan struct{}
	status *exitStatus
	logs   [2]string // stderr, stdout
	// run and service are its BENCHFLOW_RUN and BENCHFLOW_SERVICE: what
	// collect reports it as (collect.go).
	run, service string
}

func (h *helper) send(r response) {
	h.outMu.Lock()
	defer h.outMu.Unlock()
	_ = h.out.Encode(r)
}

func (h *helper) handle(ctx context.Context, r *request) response {
	switch r.Op {
	case opHello:
		return response{Hello: h.hello()}
	case opPing:
		return response{}
	case opMkdir:
		return errResp(h.mkdir(r.Path, r.Mode, r.Marker[EnvRun]))
	case opWrite:
		return errResp(h.write(r.Path, r.Data, r.Mode))
	case opStart:
		pid, err := h.start(r)
		resp := errResp(err)
		resp.PID = pid
		var ee *exec.Error
		resp.NotFound = errors.As(err, &ee)
		return resp
	case opStatus:
		h.mu.Lock()
		c := h.procs[r.PID]
		h.mu.Unlock()
		if c == nil {
			return response{Error: fmt.Sprintf("no process %d was started here", r.PID)}
		}
		select {
		case <-c.done:
			return response{Exit: c.status}
		default:
			return response{}
		}
	case opStop:
		return response{Left: stopGroup(r.PID, time.Duration(r.StopMS)*time.Millisecond)}
	case opRemove:
		return errResp(h.remove(r.Path))
	case opRead:
		b, err := readTail(r.Path, maxRead)
		resp := errResp(err)
		resp.Data = b
		return resp
	case opEnv:
		return response{Env: readHostEnv(r.IP)}
	case opVersion:
		out, err := envinfo.ServiceVersion(ctx, r.Argv)
		resp := errResp(err)
		resp.Data = []byte(out)
		return resp
	case opProcs:
		var out []remoteProc
		for _, p := range groupOf(r.PID) {
			out = append(out, remoteProc{PID: p.pid, Comm: p.comm})
		}
		return response{Procs: out}
	case opGC:
		return h.gc(r.Base)
	case opCollectStart:
		id, err := h.collectStart(ctx, r.Collect)
		resp := errResp(err)
		resp.Sampler = id
		return resp
	case opCollectStop:
		c, err := h.collectStop(r.Sampler, r.Offset)
		resp := errResp(err)
		resp.Collected = c
		return resp
	case opKill:
		var left []string
		for _, pid := range r.PIDs {
			left = append(left, stopGroup(pid, 2*time.Second)...)
		}
		return response{Left: left}
	}
	return response{Error: fmt.Sprintf("unknown request %q (a benchflow of another version?)", r.Op)}
}

func errResp(err error) response {
	if err != nil {
		return response{Error: err.Error()}
	}
	return response{}
}

func (h *helper) hello() *hello {
	hl := &hello{OS: runtime.GOOS, Arch: runtime.GOARCH, PID: os.Getpid(), UID: os.Getuid(), Owner: h.self}
	hl.Home, _ = os.UserHomeDir()
	hl.Host, _ = os.Hostname()
	hl.BootID = bootID()
	if exe, err := os.Open("/proc/self/exe"); err == nil {
		s := sha256.New()
		if _, err := io.Copy(s, exe); err == nil {
			hl.SHA256 = hex.EncodeToString(s.Sum(nil))
		}
		exe.Close()
	}
	return hl
}

// mkdir makes a folder that must not exist yet (a run folder is never
// reused, and nothing planted at its path is followed). A run folder
// (runFolderPrefix) gets the owner file and is removed at the end.
func (h *helper) mkdir(p string, mode uint32, run string) error {
	if !filepath.IsAbs(p) {
		return fmt.Errorf("mkdir %q: not an absolute path", p)
	}
	if mode == 0 {
		mode = 0o755
	}
	if err := os.Mkdir(p, os.FileMode(mode)); err != nil {
		return err
	}
	_ = os.Chmod(p, os.FileMode(mode)) // past the umask
	if strings.HasPrefix(filepath.Base(p), runFolderPrefix) {
		h.mu.Lock()
		h.folders[p] = true
		h.mu.Unlock()
		rec, _ := json.Marshal(map[string]string{"owner": h.owner, "helper": h.self, "run": run})
		if err := os.WriteFile(filepath.Join(p, ownerFile), rec, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// write creates a file that must not exist yet.
func (h *helper) write(p string, data []byte, mode uint32) error {
	if mode == 0 {
		mode = 0o644
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, os.FileMode(mode))
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(os.FileMode(mode)); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// remove removes a run folder, and refuses anything else.
func (h *helper) remove(p string) error {
	if !strings.HasPrefix(filepath.Base(p), runFolderPrefix) || !filepath.IsAbs(p) {
		return fmt.Errorf("remove %q: not a benchflow run folder", p)
	}
	if st, err := os.Lstat(p); err != nil {
		if os.IsNotExist(err) {
			return nil
		}
		return err
	} else if !st.IsDir() {
		return fmt.Errorf("remove %q: not a folder", p)
	}
	h.mu.Lock()
	delete(h.folders, p)
	h.mu.Unlock()
	return os.RemoveAll(p)
}

// start runs r.Argv directly (no shell) in a session of its own, its
// output appended to r.Log+".stdout.log" and ".stderr.log".
func (h *helper) start(r *request) (int, error) {
	if len(r.Argv) == 0 || r.Argv[0] == "" {
		return 0, errors.New("no command")
	}
	env := os.Environ()
	keys := make([]string, 0, len(r.Env))
	for k := range r.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = append(env, k+"="+r.Env[k])
	}
	for _, k := range []string{EnvRun, EnvTrial, EnvService} {
		if v, ok := r.Marker[k]; ok {
			env = append(env, k+"="+v)
		}
	}
	env = append(env, EnvController+"="+h.owner, EnvOwner+"="+h.self)
	path, err := lookPath(r.Argv[0], env, r.Dir)
	if err != nil {
		return 0, err
	}
	var files []*os.File
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	c := &child{done: make(chan struct{}), run: r.Marker[EnvRun], service: r.Marker[EnvService]}
	for i, suffix := range []string{".stderr.log", ".stdout.log"} {
		f, err := os.OpenFile(r.Log+suffix, os.O_WRONLY|os.O_CREATE|os.O_APPEND|syscall.O_NOFOLLOW, 0o644)
		if err != nil {
			return 0, fmt.Errorf("opening the log file: %w", err)
		}
		files = append(files, f)
		c.logs[i] = f.Name()
	}
	c.cmd = &exec.Cmd{
		Path: path, Args: append([]string(nil), r.Argv...), Env: env, Dir: r.Dir,
		Stderr: files[0], Stdout: files[1],
		SysProcAttr: &syscall.SysProcAttr{Setsid: true},
	}
	if err := c.cmd.Start(); err != nil {
		return 0, err
	}
	pid := c.cmd.Process.Pid
	h.mu.Lock()
	h.procs[pid] = c
	h.mu.Unlock()
	go func() {
		err := c.cmd.Wait()
		st := &exitStatus{Status: "unknown status", Code: -1}
		if ps := c.cmd.ProcessState; ps != nil {
			st.Status, st.Code = ps.String(), ps.ExitCode()
		} else if err != nil {
			st.Status = err.Error()
		}
		for _, l := range c.logs {
			if t := tailLines(l, 10); len(t) > 0 {
				st.Log, st.Tail = l, t
				break
			}
		}
		c.status = st
		close(c.done)
		h.send(response{Event: "exit", PID: pid, Exit: st})
	}()
	return pid, nil
}

// lookPath resolves a command name without a slash along the PATH of the
// process environment, as execvp would; with a slash, relative names are
// taken from dir.
func lookPath(name string, env []string, dir string) (string, error) {
	if strings.Contains(name, "/") {
		p := name
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		if st, err := os.Stat(p); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			return "", &exec.Error{Name: name, Err: exec.ErrNotFound}
		}
		return p, nil
	}
	pathVar := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			pathVar = v
		}
	}
	for _, d := range filepath.SplitList(pathVar) {
		if d == "" {
			d = "."
		}
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", &exec.Error{Name: name, Err: exec.ErrNotFound}
}

// cleanup stops every process the helper started and removes every run
// folder it made.
func (h *helper) cleanup() {
	h.stopSamplers()
	h.mu.Lock()
	var pids []int
	for pid, c := range h.procs {
		select {
		case <-c.done:
			if len(groupOf(pid)) == 0 {
				continue
			}
		default:
		}
		pids = append(pids, pid)
	}
	var folders []string
	for f := range h.folders {
		folders = append(folders, f)
	}
	h.mu.Unlock()
	var wg sync.WaitGroup
	for _, pid := range pids {
		wg.Add(1)
		go func() { defer wg.Done(); stopGroup(pid, 5*time.Second) }()
	}
	wg.Wait()
	for _, f := range folders {
		os.RemoveAll(f)
	}
}

// proc is one process of /proc.
type proc struct {
	pid, ppid, pgid int
	state           byte
	comm            string
	start           uint64
}

func readProc(pid int) (proc, error) {
	l, _, err := procfs.ReadStat(pid)
	if err != nil {
		return proc{}, err
	}
	p := proc{pid: pid, state: l.State(), comm: l.Comm()}
	if p.ppid, err = l.Int(4); err != nil {
		return proc{}, err
	}
	if p.pgid, err = l.Int(5); err != nil {
		return proc{}, err
	}
	if l.Has(22) {
		p.start, _ = l.Uint(22)
	}
	return p, nil
}

func processTable() []proc {
	pids, _ := procfs.PIDs("")
	out := make([]proc, 0, len(pids))
	for _, pid := range pids {
		if p, err := readProc(pid); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// groupOf is the live processes of the group led by leader, with their
// descendants that left it; the leader first.
func groupOf(leader int) []proc {
	table := processTable()
	children := map[int][]proc{}
	in := map[int]bool{}
	var queue, out []proc
	for _, p := range table {
		children[p.ppid] = append(children[p.ppid], p)
		if p.pgid == leader || p.pid == leader {
			in[p.pid] = true
			queue = append(queue, p)
		}
	}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if p.state != 'Z' {
			out = append(out, p)
		}
		for _, c := range children[p.pid] {
			if !in[c.pid] {
				in[c.pid] = true
				queue = append(queue, c)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if (out[i].pid == leader) != (out[j].pid == leader) {
			return out[i].pid == leader
		}
		return out[i].pid < out[j].pid
	})
	return out
}

// stopGroup sends SIGTERM to the process group led by pid (and its
// descendants outside it), waits up to grace for them to exit, then sends
// SIGKILL; it returns the processes still left.
func stopGroup(pid int, grace time.Duration) []string {
	if pid <= 1 {
		return nil
	}
	signal := func(sig syscall.Signal) int {
		n := 0
		if syscall.Kill(-pid, sig) == nil {
			n++
		}
		for _, p := range groupOf(pid) {
			if p.pgid != pid && syscall.Kill(p.pid, sig) == nil {
				n++
			}
		}
		return n
	}
	wait := func(d time.Duration) []proc {
		deadline := time.Now().Add(d)
		for {
			left := groupOf(pid)
			if len(left) == 0 || time.Now().After(deadline) {
				return left
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if signal(syscall.SIGTERM) == 0 {
		return nil
	}
	if len(wait(grace)) == 0 {
		return nil
	}
	signal(syscall.SIGKILL)
	var out []string
	for _, p := range wait(5 * time.Second) {
		out = append(out, fmt.Sprintf("%d (%s)", p.pid, p.comm))
	}
	return out
}

// sameNetNS: process pid is in this process's network namespace (true
// when either cannot be read).
func sameNetNS(pid int) bool {
	mine, err1 := os.Readlink("/proc/self/ns/net")
	theirs, err2 := os.Readlink("/proc/" + strconv.Itoa(pid) + "/ns/net")
	return err1 != nil || err2 != nil || mine == theirs
}

// selfOwner is this process's "pid:start".
func selfOwner() string {
	p, err := readProc(os.Getpid())
	if err != nil {
		return strconv.Itoa(os.Getpid()) + ":0"
	}
	return fmt.Sprintf("%d:%d", p.pid, p.start)
}

// pidStartAlive reports whether a "pid:start" process still runs.
func pidStartAlive(v string) bool {
	a, b, ok := strings.Cut(v, ":")
	pid, err1 := strconv.Atoi(a)
	start, err2 := strconv.ParseUint(b, 10, 64)
	if !ok || err1 != nil || err2 != nil || pid <= 0 {
		return false
	}
	p, err := readProc(pid)
	return err == nil && p.state != 'Z' && p.start == start
}

// environ reads a process's environment variables.
func environ(pid int) map[string]string {
	b, err := os.ReadFile(procfs.Path(pid, "environ"))
	if err != nil {
		return nil
	}
	m := map[string]string{}
	for _, kv := range bytes.Split(b, []byte{0}) {
		if k, v, ok := bytes.Cut(kv, []byte("=")); ok && bytes.HasPrefix(k, []byte("BENCHFLOW_")) {
			m[string(k)] = string(v)
		}
	}
	return m
}

// gc lists what helpers left on this host: marked service processes, run
// folders under base, and other helpers with their owners.
func (h *helper) gc(base string) response {
	var resp response
	self := os.Getpid()
	if base != "" {
		ents, _ := os.ReadDir(base)
		for _, e := range ents {
			if !e.IsDir() || !strings.HasPrefix(e.Name(), runFolderPrefix) {
				continue
			}
			p := filepath.Join(base, e.Name())
			var rec map[string]string
			b, err := os.ReadFile(filepath.Join(p, ownerFile))
			if err != nil || json.Unmarshal(b, &rec) != nil {
				continue // not recorded: not ours to remove
			}
			resp.Folders = append(resp.Folders, runFolder{Path: p, Run: rec["run"], Owner: rec["owner"], HelperAlive: pidStartAlive(rec["helper"])})
		}
	}
	for _, p := range processTable() {
		if p.pid == self || p.state == 'Z' {
			continue
		}
		if argv, err := procfs.Cmdline(p.pid); err == nil && len(argv) >= 2 && argv[1] == HelperCommand {
			if !sameNetNS(p.pid) {
				// sshd started it in another network namespace: it serves
				// another host (several test hosts share one machine), not
				// a run on this one
				continue
			}
			owner := ""
			for i, a := range argv {
				if a == "--owner" && i+1 < len(argv) {
					owner = argv[i+1]
				}
			}
			resp.Helpers = append(resp.Helpers, otherHelper{PID: p.pid, Owner: owner})
			continue
		}
		env := environ(p.pid)
		if env[EnvController] != "" && env[EnvService] != "" {
			resp.Leftover = append(resp.Leftover, leftover{PID: p.pid, PGID: p.pgid, Comm: p.comm, Run: env[EnvRun],
				Service: env[EnvService], Owner: env[EnvController], HelperAlive: pidStartAlive(env[EnvOwner])})
			continue
		}
		// A program that rewrites its environment (nginx does, for its
		// process title) is found by its working folder: a service's
		// folder in a recorded run folder.
		cwd, err := os.Readlink(procfs.Path(p.pid, "cwd"))
		if err != nil {
			continue
		}
		for _, f := range resp.Folders {
			if strings.HasPrefix(cwd, f.Path+"/") {
				rel := strings.TrimPrefix(cwd, f.Path+"/")
				svc, _, _ := strings.Cut(rel, "/")
				resp.Leftover = append(resp.Leftover, leftover{PID: p.pid, PGID: p.pgid, Comm: p.comm, Run: f.Run,
					Service: svc, Owner: f.Owner, HelperAlive: f.HelperAlive})
				break
			}
		}
	}
	return resp
}

// HelperCommand is the hidden subcommand that runs Serve.
const HelperCommand = "remote-helper"

// readTail reads at most n bytes from the end of a file.
func readTail(p string, n int64) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	from := max(0, st.Size()-n)
	return io.ReadAll(io.NewSectionReader(f, from, st.Size()-from))
}

// tailLines is the last n non-empty lines of a file.
func tailLines(p string, n int) []string {
	b, err := readTail(p, 64<<10)
	if err != nil {
		return nil
	}
	var out []string
	for _, l := range strings.Split(strings.TrimRight(string(b), "\r\n"), "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, strings.TrimRight(l, "\r"))
		}
	}
	if len(out) > n {
		out = out[len(out)-n:]
	}
	return out
}

// readHostEnv reads the host's kernel, CPU, cores and memory.
func readHostEnv(ip string) *hostEnv {
	e := &hostEnv{Cores: runtime.NumCPU()}
	e.Hostname, _ = os.Hostname()
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		e.Kernel = unix.ByteSliceToString(u.Release[:])
	}
	if b, err := os.ReadFile("/etc/os-release"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "PRETTY_NAME="); ok {
				e.OS = strings.Trim(v, `"`)
			}
		}
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				e.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	e.Sysctls = map[string]string{}
	for _, k := range envinfo.Sysctls {
		if b, err := os.ReadFile(filepath.Join("/proc/sys", strings.ReplaceAll(k, ".", "/"))); err == nil {
			e.Sysctls[k] = strings.Join(strings.Fields(string(b)), " ")
		}
	}
	// The interface of the address benchflow reached; sshd's own record
	// of it when that address is not the host's (a NAT).
	if e.NIC = nicOf(ip); e.NIC == nil {
		e.NIC = nicOf(sshServerIP())
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "MemTotal:"); ok {
				kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
				e.MemoryMB = kb / 1024
			}
		}
	}
	return e
}
