//go:build unix

package action

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
)

// killGroup starts the command in a process group of its own and makes
// cancellation kill the whole group, so that what it started (a pipeline,
// `sleep 30 &`) dies with it rather than outliving the step.
func killGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			return cmd.Process.Kill()
		}
		return nil
	}
}

// lookPath finds a program by name in the directories of pathList (a
// command's PATH, not the server's). Relative entries are skipped: a bare
// name never runs a file of the working directory.
func lookPath(name, pathList string) (string, error) {
	for _, dir := range filepath.SplitList(pathList) {
		if !filepath.IsAbs(dir) {
			continue
		}
		p := filepath.Join(dir, name)
		if info, err := os.Stat(p); err == nil && info.Mode().IsRegular() && info.Mode().Perm()&0o111 != 0 {
			return p, nil
		}
	}
	return "", errors.New("not found in PATH")
}
