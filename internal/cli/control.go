package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
)

func newRetryCmd(g *globals) *cobra.Command {
	o := &runOptions{}
	cmd := &cobra.Command{
		Use:   "retry RUN [-i name=value]...",
		Short: "Re-run a failed run from the step that failed (optionally with corrected inputs)",
		Args:  exactArgs(1, "retry: give one run id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, inputs, answers, err := openForRun(cmd, g, o, args[0])
			if err != nil {
				return err
			}
			defer s.close()
			if err := s.svc.RetryRun(s.ctx, args[0], inputs); err != nil {
				return describe(err)
			}
			return s.follow(cmd, o, args[0], answers)
		},
	}
	o.flags(cmd)
	cmd.Flags().StringArrayVarP(&o.inputs, "input", "i", nil, "a corrected input as name=value (repeatable)")
	return cmd
}

func newForkCmd(g *globals) *cobra.Command {
	o := &runOptions{}
	var from string
	cmd := &cobra.Command{
		Use:   "fork RUN --from STEP [-i name=value]...",
		Short: "Start a new run from a step of an existing run, reusing the results of the steps before it",
		Args:  exactArgs(1, "fork: give one run id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if from == "" {
				return usageErr("fork: --from STEP is required")
			}
			s, inputs, answers, err := openForRun(cmd, g, o, args[0])
			if err != nil {
				return err
			}
			defer s.close()
			id, err := s.svc.ForkRun(s.ctx, args[0], from, inputs)
			if err != nil {
				return describe(err)
			}
			if !o.asJSON {
				fmt.Fprintf(cmd.ErrOrStderr(), "forked %s from step %s of %s\n", id, from, args[0])
			}
			return s.follow(cmd, o, id, answers)
		},
	}
	o.flags(cmd)
	cmd.Flags().StringVar(&from, "from", "", "the top-level step to start from")
	cmd.Flags().StringArrayVarP(&o.inputs, "input", "i", nil, "a changed input as name=value (repeatable)")
	return cmd
}

func newPauseCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "pause RUN",
		Short: "Hold a run: it stops advancing until `stepwise resume RUN`",
		Args:  exactArgs(1, "pause: give one run id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			svc, err := g.open(context.Background(), nil)
			if err != nil {
				return err
			}
			defer svc.Close(context.Background())
			if err := svc.PauseRun(context.Background(), args[0]); err != nil {
				return describe(err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "run %s: paused (resume it with: stepwise resume %s)\n", args[0], args[0])
			return nil
		},
	}
}

// openForRun opens a session for a command on an existing run, with the
// inputs (typed by the run's workflow) and answers it was given.
func openForRun(cmd *cobra.Command, g *globals, o *runOptions, runID string) (*session, map[string]any, map[string]any, error) {
	s, err := openSession(cmd, g, o)
	if err != nil {
		return nil, nil, nil, err
	}
	l, err := s.svc.Definition(s.ctx, runID)
	if err != nil {
		s.close()
		return nil, nil, nil, describe(err)
	}
	inputs, answers, err := inputsAndAnswers(o, l.Workflow)
	if err != nil {
		s.close()
		return nil, nil, nil, err
	}
	if err := s.svc.CheckRunAnswerSteps(s.ctx, runID, answers); err != nil {
		s.close()
		return nil, nil, nil, answersErr(o.answers, err)
	}
	return s, inputs, answers, nil
}
