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
			ctx, stop, interrupted := signalContext()
			defer stop()
			svc, err := g.open(context.Background(), actionOutput(cmd, o))
			if err != nil {
				return err
			}
			defer svc.Close(context.Background())
			l, err := svc.Definition(ctx, args[0])
			if err != nil {
				return describe(err)
			}
			inputs, err := parseInputs(o.inputs, l.Workflow)
			if err != nil {
				return err
			}
			answers, err := readAnswers(o.answers)
			if err != nil {
				return err
			}
			if err := svc.RetryRun(ctx, args[0], inputs); err != nil {
				return describe(err)
			}
			return follow(ctx, cmd, svc, o, args[0], answers, interrupted)
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
			ctx, stop, interrupted := signalContext()
			defer stop()
			svc, err := g.open(context.Background(), actionOutput(cmd, o))
			if err != nil {
				return err
			}
			defer svc.Close(context.Background())
			l, err := svc.Definition(ctx, args[0])
			if err != nil {
				return describe(err)
			}
			inputs, err := parseInputs(o.inputs, l.Workflow)
			if err != nil {
				return err
			}
			answers, err := readAnswers(o.answers)
			if err != nil {
				return err
			}
			id, err := svc.ForkRun(ctx, args[0], from, inputs)
			if err != nil {
				return describe(err)
			}
			if !o.asJSON {
				fmt.Fprintf(cmd.ErrOrStderr(), "forked %s from step %s of %s\n", id, from, args[0])
			}
			return follow(ctx, cmd, svc, o, id, answers, interrupted)
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
