package cli

import (
	"fmt"

	"github.com/spf13/cobra"
	"stepwise.dev/stepwise/internal/service"
)

// previousNote marks, in the terminal, a question whose default is the
// answer given before.
const previousNote = "(previous answer)"

// questionHelp is a question's help as the terminal shows it: with
// previousNote when its default is the earlier answer.
func questionHelp(q service.Question) string {
	switch {
	case !q.Previous:
		return q.Help
	case q.Help == "":
		return previousNote
	default:
		return q.Help + " " + previousNote
	}
}

func newRewindCmd(g *globals) *cobra.Command {
	o := &runOptions{}
	cmd := &cobra.Command{
		Use:   "rewind RUN STEP",
		Short: "Go back to a question of a run: a new run asks again from there, the earlier answers as defaults",
		Args:  exactArgs(2, "rewind: give a run id and a question's step id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return goBack(cmd, g, o, args[0], "rewound to "+args[1]+" as", func(s *session) (string, error) {
				return s.svc.RewindRun(s.ctx, args[0], args[1])
			})
		},
	}
	o.flags(cmd)
	return cmd
}

func newRestartCmd(g *globals) *cobra.Command {
	o := &runOptions{}
	cmd := &cobra.Command{
		Use:   "restart RUN",
		Short: "Start a run over with the same inputs, the earlier answers as defaults",
		Args:  exactArgs(1, "restart: give one run id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return goBack(cmd, g, o, args[0], "restarted as", func(s *session) (string, error) {
				return s.svc.RestartRun(s.ctx, args[0])
			})
		},
	}
	o.flags(cmd)
	return cmd
}

// goBack starts the new run, says so, and follows it as resume does (an
// unfinished old run is canceled by the engine).
func goBack(cmd *cobra.Command, g *globals, o *runOptions, runID, what string, start func(*session) (string, error)) error {
	s, _, answers, err := openForRun(cmd, g, o, runID)
	if err != nil {
		return err
	}
	defer s.close()
	id, err := start(s)
	if err != nil {
		return describe(err)
	}
	if !o.asJSON {
		fmt.Fprintf(cmd.ErrOrStderr(), "%s %s %s\n", runID, what, id)
	}
	return s.follow(cmd, o, id, answers)
}
