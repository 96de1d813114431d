package main

import (
	"context"
	"fmt"
)

// loopLength is how many questions one ask-loop run answers before the
// next run starts: every drive loads the run's recorded steps, so a run
// that answered thousands would measure that loading rather than a
// continue.
const loopLength = 100

// continueStdio measures run_continue round trips over stdio against the
// built binary: each call answers the open question, the run records it,
// jumps back and asks again, and the call returns the new pause with its
// token. Calls are sequential, as an agent answering a person makes them.
func continueStdio(ctx context.Context, bin, home, durability string, n int) (p50, p99 Figure, err error) {
	p50 = Figure{Name: "continue_stdio_p50_ms", Unit: "ms", target: valueAtMost(1, "p50 ≤ 1 ms")}
	p99 = Figure{Name: "continue_stdio_p99_ms", Unit: "ms", target: valueAtMost(5, "p99 ≤ 5 ms")}
	cs, err := stepwiseStdio(ctx, bin, home, durability)
	if err != nil {
		return p50, p99, err
	}
	defer cs.Close()
	lat, err := continueLoop(ctx, cs, n)
	if err != nil {
		return p50, p99, err
	}
	p50.Value, p99.Value = ms(lat.Percentile(50)), ms(lat.Percentile(99))
	p50.againstTarget(1)
	p99.againstTarget(5)
	detail := fmt.Sprintf("%d sequential run_continue over stdio, runs of %d questions, --durability %s", len(lat), loopLength, durability)
	if read, err := readFloor(ctx, cs, len(lat)); err != nil {
		detail += fmt.Sprintf("; run_get on the same session: %v", err)
	} else {
		detail += fmt.Sprintf("; on the same session, run_get of a waiting run (the same round trip with a read and no commit): p50 %.2f p99 %.2f ms", ms(read.Percentile(50)), ms(read.Percentile(99)))
	}
	p50.detail, p99.detail = detail, detail
	return p50, p99, nil
}

// readFloor times n sequential run_get calls of a waiting ask-loop run:
// what a continue's round trip costs without the answer, its commit and
// the wait for the next pause.
func readFloor(ctx context.Context, cs *Session, n int) (Latencies, error) {
	res, err := call(ctx, cs, "run_start", map[string]any{"workflow": "ask-loop"})
	if err != nil {
		return nil, err
	}
	args := map[string]any{"run_id": field(res, "run_id")}
	load, err := drive(n, 1, func(int) error {
		_, err := call(ctx, cs, "run_get", args)
		return err
	})
	return load.Lat, err
}

// continueLoop answers n questions of ask-loop runs, loopLength per run,
// one run_continue at a time, and times each call (not the run_start of
// each run).
func continueLoop(ctx context.Context, cs *Session, n int) (Latencies, error) {
	var lat Latencies
	for len(lat) < n {
		res, err := call(ctx, cs, "run_start", map[string]any{"workflow": "ask-loop"})
		if err != nil {
			return nil, err
		}
		token := field(res, "pause", "token")
		load, err := drive(min(loopLength, n-len(lat)), 1, func(i int) error {
			res, err := call(ctx, cs, "run_continue", map[string]any{"token": token, "value": i})
			if err != nil {
				return err
			}
			if token = field(res, "pause", "token"); token == "" {
				return fmt.Errorf("run_continue returned no new pause: status %q", field(res, "status"))
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		lat = append(lat, load.Lat...)
	}
	return lat, nil
}
