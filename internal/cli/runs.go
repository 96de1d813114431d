package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"stepwise.dev/stepwise/code"
	"stepwise.dev/stepwise/internal/service"
)

func newRunsCmd(g *globals) *cobra.Command {
	var (
		workflowName, status, cursor string
		limit                        int
		asJSON                       bool
		since                        durationFlag
	)
	cmd := &cobra.Command{
		Use:   "runs",
		Short: "List runs, newest first",
		Args:  exactArgs(0, "runs takes no arguments (use --workflow, --status)"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			svc, err := g.open(context.Background(), io.Discard)
			if err != nil {
				return err
			}
			defer svc.Close(context.Background())
			f := service.RunFilter{Workflow: workflowName, Limit: limit, Cursor: cursor}
			if status != "" {
				for _, s := range strings.Split(status, ",") {
					s = strings.TrimSpace(s)
					switch s {
					case code.StatusQueued, code.StatusPending, code.StatusRunning, code.StatusWaiting, code.StatusPaused, code.StatusSucceeded, code.StatusFailed, code.StatusCanceled:
					default:
						return usageErr("--status %q: use queued, pending, running, waiting, paused, succeeded, failed or canceled", s)
					}
					f.Status = append(f.Status, s)
				}
			}
			if since > 0 {
				f.CreatedAfter = time.Now().Add(-time.Duration(since))
			}
			runs, next, err := svc.ListRuns(context.Background(), f)
			if err != nil {
				return describe(err)
			}
			out := cmd.OutOrStdout()
			if asJSON {
				return writeJSON(out, map[string]any{"runs": runs, "next_cursor": next})
			}
			printRuns(out, runs)
			if next != "" {
				fmt.Fprintf(out, "more: stepwise runs --cursor %s\n", next)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&workflowName, "workflow", "", "only runs of this workflow")
	cmd.Flags().StringVar(&status, "status", "", "only runs in these statuses (comma-separated)")
	cmd.Flags().Var(&since, "since", "only runs created within this duration (e.g. 24h, 7d)")
	cmd.Flags().IntVar(&limit, "limit", 20, "page size")
	cmd.Flags().StringVar(&cursor, "cursor", "", "continue a previous listing")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// printRuns writes a page of runs as a table. A sub-workflow run names its
// parent, and is listed under it, indented, when the parent is on the page.
func printRuns(w io.Writer, runs []*service.RunView) {
	onPage := map[string]bool{}
	for _, r := range runs {
		onPage[r.ID] = true
	}
	children := map[string][]*service.RunView{}
	for _, r := range runs {
		if r.ParentID != "" && onPage[r.ParentID] {
			children[r.ParentID] = append(children[r.ParentID], r)
		}
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tWORKFLOW\tSTATUS\tCREATED\tPARENT")
	var row func(r *service.RunView, depth int)
	row = func(r *service.RunView, depth int) {
		id := r.ID
		if depth > 0 {
			id = strings.Repeat("  ", depth-1) + "└ " + id
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", id, r.Workflow, r.Status, r.CreatedAt.Local().Format("2006-01-02 15:04:05"), r.ParentID)
		for _, c := range children[r.ID] {
			row(c, depth+1)
		}
	}
	for _, r := range runs {
		if r.ParentID == "" || !onPage[r.ParentID] {
			row(r, 0)
		}
	}
	tw.Flush()
}

func newShowCmd(g *globals) *cobra.Command {
	var asJSON, followIt bool
	cmd := &cobra.Command{
		Use:   "show RUN",
		Short: "Show a run: status, inputs, outputs, its pause, and a timeline of steps and events",
		Long: "Show a run: status, inputs, outputs, its pause, and a timeline of steps and events.\n\n" +
			"With --follow, then follow it live, whichever process drives it: a line as each step starts\n" +
			"and ends, until the run ends or waits on a question.\n" +
			"Exit status with --follow: 0 succeeded, 1 failed or canceled, 3 waiting for an answer,\n" +
			"130 interrupted (the run goes on).",
		Args: exactArgs(1, "show: give one run id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if followIt {
				if asJSON {
					return usageErr("show: --follow prints lines, not JSON")
				}
				return followShow(cmd, g, args[0])
			}
			return g.with(func(ctx context.Context, svc *service.Service) error {
				_, err := show(ctx, cmd, svc, args[0], asJSON)
				return err
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().BoolVarP(&followIt, "follow", "f", false, "then follow the run live until it ends or waits on a question")
	return cmd
}

// show prints a run and returns the sequence number of its last event.
func show(ctx context.Context, cmd *cobra.Command, svc *service.Service, id string, asJSON bool) (int64, error) {
	v, err := svc.GetRun(ctx, id)
	if err != nil {
		return 0, describe(err)
	}
	events, err := svc.Events(ctx, id, 0, 0)
	if err != nil {
		return 0, describe(err)
	}
	var last int64
	if n := len(events); n > 0 {
		last = events[n-1].Seq
	}
	out := cmd.OutOrStdout()
	if asJSON {
		evs := make([]map[string]any, len(events))
		for i, e := range events {
			m := map[string]any{"seq": e.Seq, "type": e.Type, "at": e.At}
			if e.StepID != "" {
				m["step_id"] = e.StepID
			}
			if len(e.Data) > 0 {
				m["data"] = json.RawMessage(e.Data)
			}
			evs[i] = m
		}
		return last, writeJSON(out, map[string]any{"run": v, "events": evs})
	}
	printHuman(out, v)
	fmt.Fprintf(out, "workflow: %s (%s)\ncreated: %s\n", v.Workflow, v.Version, v.CreatedAt.Local().Format(time.RFC3339))
	if len(v.Inputs) > 0 {
		b, _ := json.Marshal(v.Inputs)
		fmt.Fprintf(out, "inputs: %s\n", b)
	}
	if v.ParentID != "" {
		fmt.Fprintf(out, "parent run: %s\n", v.ParentID)
	}
	for _, c := range v.Children {
		fmt.Fprintf(out, "child run: %s\n", c)
	}
	printSteps(out, v.Steps)
	fmt.Fprintln(out, "timeline:")
	for _, line := range timeline(events, v.CreatedAt) {
		fmt.Fprintln(out, line)
	}
	return last, nil
}

// printSteps lists a run's recorded steps with what each gave: the answer
// of a question, the output of an action, the error of a failure (as the
// view has them: secret answers and secret values masked).
func printSteps(w io.Writer, steps []service.StepView) {
	if len(steps) == 0 {
		return
	}
	fmt.Fprintln(w, "steps:")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, s := range steps {
		name := s.ID
		if s.Key != "" {
			name = s.Key
		}
		if s.Visit > 1 {
			name += fmt.Sprintf(" (visit %d)", s.Visit)
		}
		var detail []string
		if s.Answer != nil {
			detail = append(detail, "answer: "+shorten(compact(s.Answer)))
		}
		if s.Output != nil {
			detail = append(detail, "output: "+shorten(compact(s.Output)))
		}
		if s.Error != "" {
			detail = append(detail, "error: "+shorten(s.Error))
		}
		if s.Attempts > 1 {
			detail = append(detail, fmt.Sprintf("(%d attempts)", s.Attempts))
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", name, s.Status, strings.Join(detail, "  "))
	}
	tw.Flush()
}

// shownLength is how much of a value show prints on a step's line (--json
// has it all).
const shownLength = 200

// shorten cuts a one-line text to shownLength characters.
func shorten(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if r := []rune(s); len(r) > shownLength {
		return string(r[:shownLength-1]) + "…"
	}
	return s
}

// timeline is a run's events as lines: the offset from start, right-aligned
// to the widest offset so that the columns after it line up, the type, the
// step and the data.
func timeline(events []service.StoredEvent, start time.Time) []string {
	offsets := make([]string, len(events))
	width := 0
	for i, e := range events {
		offsets[i] = "+" + offset(e.At.Sub(start))
		width = max(width, len(offsets[i]))
	}
	lines := make([]string, len(events))
	for i, e := range events {
		line := fmt.Sprintf("  %*s  %-15s", width, offsets[i], e.Type)
		if e.StepID != "" {
			line += " " + e.StepID
		}
		if len(e.Data) > 0 && e.Type != "run.created" {
			line += " " + string(e.Data)
		}
		lines[i] = strings.TrimRight(line, " ")
	}
	return lines
}

// offset writes a duration to the millisecond in one shape whatever its
// size: 0.013s, 5.100s, 1m05.200s, 2h01m05.200s.
func offset(d time.Duration) string {
	d = max(d, 0).Round(time.Millisecond)
	h, m := d/time.Hour, (d%time.Hour)/time.Minute
	s := float64(d%time.Minute) / float64(time.Second)
	switch {
	case h > 0:
		return fmt.Sprintf("%dh%02dm%06.3fs", h, m, s)
	case m > 0:
		return fmt.Sprintf("%dm%06.3fs", m, s)
	}
	return fmt.Sprintf("%.3fs", s)
}

func newCancelCmd(g *globals) *cobra.Command {
	var reason string
	var compensate bool
	cmd := &cobra.Command{
		Use:   "cancel RUN",
		Short: "Cancel a run",
		Args:  exactArgs(1, "cancel: give one run id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.with(func(ctx context.Context, svc *service.Service) error {
				return cancelRun(ctx, cmd, svc, args[0], reason, compensate)
			})
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why (recorded in the run's events)")
	cmd.Flags().BoolVar(&compensate, "compensate", false, "run the compensations of completed steps (and on_failure hooks) first")
	return cmd
}

func cancelRun(ctx context.Context, cmd *cobra.Command, svc *service.Service, id, reason string, compensate bool) error {
	if err := svc.Cancel(ctx, id, reason, compensate); err != nil {
		return describe(err)
	}
	if compensate {
		// This process compensates: wait until it is done.
		st, err := svc.Wait(ctx, id, 0)
		if err != nil {
			return describe(err)
		}
		fmt.Fprintf(cmd.OutOrStdout(), "run %s: %s (compensated)\n", id, st)
		return nil
	}
	fmt.Fprintf(cmd.OutOrStdout(), "run %s: canceled\n", id)
	return nil
}
