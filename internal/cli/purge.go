package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"charm.land/huh/v2"
	"github.com/spf13/cobra"

	"stepwise.dev/stepwise/code"
	"stepwise.dev/stepwise/internal/service"
)

// askPurge asks the person whether to go ahead with a purge.
type askPurge func(ctx context.Context, question string) (bool, error)

// purgeAsker returns how to ask the person in the terminal, or nil when
// stdin or stderr is not one (a script, a pipe): then only --yes confirms.
// A variable so that tests can play the person.
var purgeAsker = func(out io.Writer) askPurge {
	if !isTerminal(os.Stdin) || !isTerminal(os.Stderr) {
		return nil
	}
	return func(ctx context.Context, question string) (bool, error) {
		yes := false
		field := huh.NewConfirm().Title(question).Description("This cannot be undone.").Affirmative("Purge").Negative("Keep them").Value(&yes)
		if err := huh.NewForm(huh.NewGroup(field)).WithOutput(out).RunWithContext(ctx); err != nil {
			if errors.Is(err, huh.ErrUserAborted) || ctx.Err() != nil {
				return false, errAborted
			}
			return false, err
		}
		return yes, nil
	}
}

func newPurgeCmd(g *globals) *cobra.Command {
	var (
		workflowName, status string
		olderThan            durationFlag
		yes, asJSON          bool
	)
	cmd := &cobra.Command{
		Use:   "purge [--workflow W] [--status S] [--older-than 30d] [--yes]",
		Short: "Delete finished runs and their history (asks first, unless --yes)",
		Long: "purge deletes finished runs (succeeded, failed, canceled) with everything recorded about them:\n" +
			"steps, events, answers and their sub-workflow runs. Runs still active are never touched, nor\n" +
			"finished runs whose sub-workflow runs are. In a terminal it says how many runs would go and asks;\n" +
			"elsewhere it needs --yes. It cannot be undone.",
		Args: exactArgs(0, "purge takes no arguments (use --workflow, --status, --older-than)"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			f := service.PurgeFilter{Workflow: workflowName}
			if status != "" {
				for _, s := range strings.Split(status, ",") {
					s = strings.TrimSpace(s)
					if !code.Finished(s) {
						return usageErr("--status %q: only finished runs are purged: use succeeded, failed or canceled", s)
					}
					f.Status = append(f.Status, s)
				}
			}
			f.OlderThan = time.Duration(olderThan)
			return g.with(func(ctx context.Context, svc *service.Service) error {
				return purge(ctx, cmd, svc, f, yes, asJSON)
			})
		},
	}
	cmd.Flags().StringVar(&workflowName, "workflow", "", "only runs of this workflow")
	cmd.Flags().StringVar(&status, "status", "", "only runs that ended so: succeeded, failed, canceled (comma-separated; default all)")
	cmd.Flags().Var(&olderThan, "older-than", "only runs that finished at least this long ago (e.g. 30d, 12h)")
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "do not ask: purge (needed without a terminal)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the counts as JSON")
	return cmd
}

// purge counts what f selects, has the person confirm that number, then
// purges and prints what went.
func purge(ctx context.Context, cmd *cobra.Command, svc *service.Service, f service.PurgeFilter, yes, asJSON bool) error {
	f.DryRun = true
	would, err := svc.PurgeRuns(ctx, f)
	if err != nil {
		return describe(err)
	}
	out := cmd.OutOrStdout()
	if would.Runs == 0 {
		if asJSON {
			return writeJSON(out, service.PurgeResult{})
		}
		fmt.Fprintln(out, "nothing to purge: no finished run matches")
		return nil
	}
	what := fmt.Sprintf("%d finished %s (%d events)", would.Runs, plural(would.Runs, "run", "runs"), would.Events)
	if !yes {
		ask := purgeAsker(cmd.ErrOrStderr())
		if ask == nil {
			return usageErr("purge would delete %s and cannot be undone: run it again with --yes to confirm (there is no terminal to ask in)", what)
		}
		ok, err := ask(ctx, "Purge "+what+" with their history?")
		if errors.Is(err, errAborted) {
			return &exitError{code: ExitInterrupted, msg: "interrupted: nothing was purged"}
		}
		if err != nil {
			return describe(err)
		}
		if !ok {
			return &exitError{code: ExitInvalid, msg: "not confirmed: nothing was purged"}
		}
	}
	f.DryRun = false
	res, err := svc.PurgeRuns(ctx, f)
	if err != nil {
		return describe(err)
	}
	if asJSON {
		return writeJSON(out, res)
	}
	fmt.Fprintf(out, "purged %d %s: %d steps, %d attempts, %d events, %d pauses, %d answers, %d timers, %d workflow versions no longer used\n",
		res.Runs, plural(res.Runs, "run", "runs"), res.Steps, res.Attempts, res.Events, res.Pauses, res.Answers, res.Timers, res.Versions)
	return nil
}
