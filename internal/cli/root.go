// Package cli holds stepwise's command-line surface: cobra commands that
// parse flags, call the packages that do the work, and print results. It
// holds no logic of its own beyond formatting.
package cli

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
)

// Exit codes shared by all commands.
const (
	ExitOK      = 0 // success
	ExitInvalid = 1 // the command ran and found a problem (invalid workflow, failed run)
	ExitUsage   = 2 // bad usage or an I/O error
)

// exitError carries an exit code and a one-line message out of a command.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

func usageErr(format string, args ...any) error {
	return &exitError{code: ExitUsage, msg: fmt.Sprintf(format, args...)}
}

// Version is the build's version, set by the linker.
var Version = "dev"

// NewRoot builds the root command with every subcommand.
func NewRoot(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "stepwise",
		Short:         "A durable workflow engine driven by agents and people over MCP",
		Long:          "stepwise discovers, authors, validates, saves and runs workflows.\nSee docs/WORKFLOWS.md for the workflow language.",
		Version:       Version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(flagError)
	g := &globals{}
	g.register(root)
	root.AddCommand(newValidateCmd(), newSchemaCmd(), newGraphCmd(g), newRunCmd(g), newResumeCmd(g), newRunsCmd(g), newShowCmd(g), newCancelCmd(g),
		newRetryCmd(g), newForkCmd(g), newRewindCmd(g), newRestartCmd(g), newPauseCmd(g), newPurgeCmd(g), newServeCmd(g),
		newSaveCmd(g), newListCmd(g), newGetCmd(g), newRenameCmd(g), newDeleteCmd(g), newGenerateCmd(g),
		newPlanCmd(g), newCatalogCmd(g), newSchedulesCmd(g))
	return root
}

// Main runs the CLI with the process's arguments and returns the exit code.
// Errors are printed as one line; there are never stack traces.
func Main(args []string, stdout, stderr io.Writer) int {
	root := NewRoot(stdout, stderr)
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return ExitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.msg != "" {
			fmt.Fprintf(stderr, "stepwise: %s\n", ee.msg)
		}
		return ee.code
	}
	// Cobra's own errors (unknown command, bad flag) are usage errors.
	fmt.Fprintf(stderr, "stepwise: %s\n", err)
	return ExitUsage
}

// Run is Main for the real process.
func Run() int { return Main(os.Args[1:], os.Stdout, os.Stderr) }
