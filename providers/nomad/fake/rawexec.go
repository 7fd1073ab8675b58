package fake

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	napi "github.com/hashicorp/nomad/api"
)

// taskProc is a raw_exec task the fake runs for real (Nomad.RunRawExec).
type taskProc struct {
	task           string
	cmd            *exec.Cmd
	stdout, stderr lockedBuffer
	done           chan struct{}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startTaskLocked starts t's command with the environment the raw_exec
// driver gives a task, its env templates rendered into it.
func (n *Nomad) startTaskLocked(fa *fakeAlloc, t *napi.Task, ports []napi.PortMapping) (*taskProc, error) {
	command, _ := t.Config["command"].(string)
	if command == "" {
		return nil, fmt.Errorf("task %s: no command", t.Name)
	}
	env := map[string]string{
		"NOMAD_ALLOC_ID": fa.a.ID, "NOMAD_ALLOC_NAME": fa.a.Name, "NOMAD_ALLOC_INDEX": allocIndex(fa.a.Name),
		"NOMAD_JOB_NAME": fa.a.JobID, "NOMAD_GROUP_NAME": fa.a.TaskGroup, "NOMAD_TASK_NAME": t.Name,
		"NOMAD_TASK_DIR": os.TempDir(),
	}
	for _, p := range ports {
		l := strings.NewReplacer("-", "_", ".", "_").Replace(p.Label)
		env["NOMAD_PORT_"+l] = strconv.Itoa(p.Value)
		env["NOMAD_IP_"+l] = p.HostIP
		env["NOMAD_ADDR_"+l] = p.HostIP + ":" + strconv.Itoa(p.Value)
	}
	for k, v := range t.Env {
		env[k] = interpolate(v, env)
	}
	if err := n.taskEnvTemplatesLocked(fa, t, env); err != nil {
		return nil, err
	}
	var args []string
	switch a := t.Config["args"].(type) {
	case []string:
		args = a
	case []any:
		for _, x := range a {
			args = append(args, fmt.Sprint(x))
		}
	}
	for i := range args {
		args[i] = interpolate(args[i], env)
	}
	p := &taskProc{task: t.Name, done: make(chan struct{})}
	p.cmd = exec.Command(interpolate(command, env), args...)
	p.cmd.Env = os.Environ()
	for k, v := range env {
		p.cmd.Env = append(p.cmd.Env, k+"="+v)
	}
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("failed to launch command with executor: %w", err)
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	return p, nil
}

// interpolate replaces ${NAME} with env's values, as Nomad does in task
// config and env (unknown names are left as they are).
func interpolate(s string, env map[string]string) string {
	return os.Expand(s, func(k string) string {
		if v, ok := env[k]; ok {
			return v
		}
		return "${" + k + "}"
	})
}

// allocIndex is the index in an allocation name "job.group[3]".
func allocIndex(name string) string {
	i, j := strings.LastIndexByte(name, '['), strings.LastIndexByte(name, ']')
	if i < 0 || j < i {
		return "0"
	}
	return name[i+1 : j]
}

func (p *taskProc) signal(sig syscall.Signal) {
	if p.cmd.Process != nil {
		_ = syscall.Kill(-p.cmd.Process.Pid, sig)
	}
}

// kill ends the task (its process group) and waits, bounded, for it.
func (p *taskProc) kill() {
	p.signal(syscall.SIGKILL)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
	}
}
