package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// listShapes are the run_list calls measured, in turn: the first page of
// everything, of one status, of one workflow.
var listShapes = []map[string]any{
	{},
	{"status": "failed"},
	{"workflow": "populate"},
}

// storedReads fills a home with n runs (see populate), then starts a
// server on it and measures sequential run_get calls of random stored
// runs and run_list calls of the shapes above, reads calls each, over
// stdio.
func storedReads(ctx context.Context, bin, home, durability string, n, reads int) (get, list Figure, err error) {
	get = Figure{Name: "run_get_p99_ms_100k", Unit: "ms", target: valueAtMost(10, "p99 ≤ 10 ms")}
	list = Figure{Name: "run_list_p99_ms_100k", Unit: "ms", target: valueAtMost(10, "p99 ≤ 10 ms")}
	ids, took, err := populate(ctx, home, n)
	if err != nil {
		return get, list, fmt.Errorf("populate %d runs: %w", n, err)
	}
	cs, err := stepwiseStdio(ctx, bin, home, durability)
	if err != nil {
		return get, list, err
	}
	defer cs.Close()
	if err := awaitStarted(ctx, cs); err != nil { // the first read is not the start's
		return get, list, err
	}
	rng := rand.New(rand.NewPCG(1, 2)) // the same runs every time
	gets, err := drive(reads, 1, func(int) error {
		_, err := call(ctx, cs, "run_get", map[string]any{"run_id": ids[rng.IntN(len(ids))]})
		return err
	})
	if err != nil {
		return get, list, err
	}
	lists, err := drive(reads, 1, func(i int) error {
		_, err := call(ctx, cs, "run_list", listShapes[i%len(listShapes)])
		return err
	})
	if err != nil {
		return get, list, err
	}
	var perShape []string
	for s, args := range listShapes {
		var l Latencies
		for i := s; i < len(lists.Lat); i += len(listShapes) {
			l = append(l, lists.Lat[i])
		}
		perShape = append(perShape, fmt.Sprintf("%v p50 %.2f p99 %.2f", args, ms(l.Percentile(50)), ms(l.Percentile(99))))
	}
	populated := fmt.Sprintf("%d runs stored (copies of one engine run, written in %.1f s, %.0f/s)", n, took.Seconds(), float64(n)/took.Seconds())
	get.Value, list.Value = ms(gets.Lat.Percentile(99)), ms(lists.Lat.Percentile(99))
	get.againstTarget(10)
	list.againstTarget(10)
	get.detail = fmt.Sprintf("%s; %d sequential run_get of random runs over stdio: p50 %.2f ms", populated, reads, ms(gets.Lat.Percentile(50)))
	list.detail = fmt.Sprintf("%s; %d sequential run_list over stdio, shapes in turn: %s", populated, reads, strings.Join(perShape, "; "))
	return get, list, nil
}

// since is a compact elapsed time for progress lines.
func since(t time.Time) string { return time.Since(t).Round(100 * time.Millisecond).String() }
