//go:build !unix

package action

import "os/exec"

// killGroup: without process groups here, cancellation kills the command
// itself (exec's default).
func killGroup(*exec.Cmd) {}

// lookPath finds a program by name. This platform's lookup (extensions,
// the current directory rules) is exec's; pathList is not consulted.
func lookPath(name, _ string) (string, error) { return exec.LookPath(name) }
