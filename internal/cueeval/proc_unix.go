//go:build unix

package cueeval

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

// isolate makes cmd start in a process group of its own, and its
// cancellation kill that whole group.
func isolate(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		if errors.Is(err, syscall.ESRCH) {
			return os.ErrProcessDone
		}
		return err
	}
}
