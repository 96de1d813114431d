package main

import (
	"context"
	"fmt"
	"time"
)

// waitingRSS measures the resident set of a server that holds n runs
// waiting on a question. The runs are started through the MCP surface of
// that very server (run_start, 8 in flight), so whatever the server keeps
// for a run it started and for the calls that started it is in the figure.
// The baseline is the same process, started (awaitStarted), before the
// first run_start.
func waitingRSS(ctx context.Context, bin, home, durability string, n int) (Figure, error) {
	f := Figure{Name: "waiting_10k_rss_mb", Unit: "MB"}
	cs, err := stepwiseStdio(ctx, bin, home, durability)
	if err != nil {
		return f, err
	}
	defer cs.Close()
	if err := awaitStarted(ctx, cs); err != nil {
		return f, err
	}
	before, err := memory(cs.Pid())
	if err != nil {
		return f, err
	}
	t0 := time.Now()
	if _, err := drive(n, inFlight, func(int) error {
		_, err := startWaiting(ctx, cs)
		return err
	}); err != nil {
		return f, err
	}
	took := time.Since(t0)
	// Let the server finish what the last calls left behind (deferred
	// unsubscribes, the scheduler's goroutines) before reading.
	time.Sleep(500 * time.Millisecond)
	after, err := memory(cs.Pid())
	if err != nil {
		return f, err
	}
	f.Value = after.RSS
	f.compare("the same server before the runs", before.RSS)
	f.detail = fmt.Sprintf("%d runs waiting, started by run_start over stdio in %.1f s (%.0f/s), --durability %s; 0.5 s after the last: %s, before: %s",
		n, took.Seconds(), float64(n)/took.Seconds(), durability, after, before)
	return f, nil
}
