package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"stepwise.dev/stepwise/code"
	"stepwise.dev/stepwise/internal/service"
)

// followShow is show --follow: the run as show prints it, then a line as
// each of its steps starts and ends — whichever process drives it — until
// it ends (exit 0 succeeded, 1 failed or canceled) or waits on a question
// (printed with how to answer it; exit 3). Ctrl-C stops following (130);
// the run goes on.
func followShow(cmd *cobra.Command, g *globals, id string) error {
	ctx, stop, interrupted := signalContext()
	defer stop()
	svc, err := g.open(context.Background(), io.Discard)
	if err != nil {
		return err
	}
	defer svc.Close(context.Background())
	after, err := show(ctx, cmd, svc, id, false)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	fmt.Fprintln(out, "following:")
	v, err := svc.Follow(ctx, id, after, func(e service.StoredEvent) { followLine(out, e) })
	if err != nil {
		if interrupted() || errors.Is(err, context.Canceled) {
			return &exitError{code: ExitInterrupted, msg: fmt.Sprintf("stopped following run %s; it goes on: stepwise show --follow %s", id, id)}
		}
		return describe(err)
	}
	printHuman(out, v)
	switch v.Status {
	case code.StatusSucceeded:
		return nil
	case code.StatusWaiting:
		return &exitError{code: ExitWaiting}
	default:
		return &exitError{code: ExitInvalid}
	}
}

// followLine prints an event of a followed run: a step's start, else what
// a run's progress prints (progressLine).
func followLine(w io.Writer, e service.StoredEvent) {
	if e.Type == code.EventStepStarted {
		fmt.Fprintf(w, "  → %s\n", e.StepID)
		return
	}
	progressLine(w, service.Event{RunID: e.RunID, Seq: e.Seq, Type: e.Type, StepID: e.StepID, Data: e.Data, At: e.At}, 0)
}
