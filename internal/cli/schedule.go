package cli

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"stepwise.dev/stepwise/internal/service"
)

func newSchedulesCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "schedules [--json]",
		Short: "List the library's schedules with their next fire times",
		Long: "schedules lists the schedule triggers of the library's workflows: when each fires next, whether it is\n" +
			"paused, and its last run. `stepwise serve` fires them; `schedules pause KEY` and `schedules resume KEY`\n" +
			"hold and release one (KEY is workflow#index, as listed).",
		Args: exactArgs(0, "schedules takes no arguments (subcommands: pause KEY, resume KEY)"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return g.with(func(ctx context.Context, svc *service.Service) error {
				if err := svc.SyncAllSchedules(ctx); err != nil {
					return describe(err)
				}
				list, err := svc.ListSchedules(ctx)
				if err != nil {
					return describe(err)
				}
				out := cmd.OutOrStdout()
				if asJSON {
					return writeJSON(out, list)
				}
				if len(list) == 0 {
					fmt.Fprintln(out, "no schedules: library workflows declare them under triggers:")
					return nil
				}
				tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "KEY\tWHEN\tNEXT FIRE\tLAST RUN")
				for _, s := range list {
					when := "every " + s.Every
					if s.Cron != "" {
						when = "cron " + s.Cron
						if s.Timezone != "" {
							when += " (" + s.Timezone + ")"
						}
					}
					next := s.NextFire.Local().Format(time.DateTime)
					if s.Paused {
						next = "paused"
					}
					last := s.LastRunID
					if last == "" {
						last = "-"
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", s.Key, when, next, last)
				}
				return tw.Flush()
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the schedules as JSON")
	for _, paused := range []bool{true, false} {
		use, short := "pause KEY", "Stop a schedule firing until resumed"
		if !paused {
			use, short = "resume KEY", "Let a paused schedule fire again, from its next instant"
		}
		cmd.AddCommand(&cobra.Command{Use: use, Short: short,
			Args: exactArgs(1, "give the schedule's key (workflow#index, as `stepwise schedules` lists it)"),
			RunE: func(cmd *cobra.Command, args []string) error {
				return g.with(func(ctx context.Context, svc *service.Service) error {
					if err := svc.SyncAllSchedules(ctx); err != nil {
						return describe(err)
					}
					info, err := svc.PauseSchedule(ctx, args[0], paused)
					if err != nil {
						return describe(err)
					}
					if paused {
						fmt.Fprintf(cmd.OutOrStdout(), "schedule %s paused\n", info.Key)
					} else {
						fmt.Fprintf(cmd.OutOrStdout(), "schedule %s resumed: next fire %s\n", info.Key, info.NextFire.Local().Format(time.DateTime))
					}
					return nil
				})
			}})
	}
	return cmd
}
