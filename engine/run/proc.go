package run

import (
	"os/exec"
	"syscall"
	"time"
)

// setProcessGroup runs cmd in its own process group, killed as a whole
// when its context ends (also if benchflow dies: Pdeathsig).
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error {
		if cmd.Process == nil {
			return nil
		}
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	cmd.WaitDelay = 5 * time.Second
}
