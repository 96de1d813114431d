package main

import (
	"cmp"
	"context"
	"fmt"
	"os/exec"
	"slices"
	"time"
)

// Spawns are the medians of starting a server n times.
type Spawns struct {
	N      int
	Start  time.Duration // spawn → initialized
	Ready  time.Duration // spawn → a first tools/list answered
	Memory Memory        // right after initialization (the start with the median RSS)
}

func (s Spawns) String() string {
	return fmt.Sprintf("spawn %.1f ms (a first tools/list answered at %.1f ms), RSS %s", ms(s.Start), ms(s.Ready), s.Memory)
}

// spawns starts a server n times over stdio (after one start that is not
// counted: it creates the home's database and key, and warms the page
// cache) and takes the medians of the time from exec to the end of the
// initialize handshake, and of the resident set once the server has
// answered a tools/list after it.
func spawns(ctx context.Context, n int, start func() (*Session, error)) (Spawns, error) {
	var times, ready []time.Duration
	var mem []Memory
	for i := range n + 1 {
		t0 := time.Now()
		cs, err := start()
		if err != nil {
			return Spawns{}, err
		}
		d := time.Since(t0)
		if err := awaitStarted(ctx, cs); err != nil {
			cs.Close()
			return Spawns{}, err
		}
		r := time.Since(t0)
		m, err := memory(cs.Pid())
		cs.Close()
		if err != nil {
			return Spawns{}, err
		}
		if i > 0 {
			times, ready, mem = append(times, d), append(ready, r), append(mem, m)
		}
	}
	slices.Sort(times)
	slices.Sort(ready)
	slices.SortFunc(mem, func(a, b Memory) int { return cmp.Compare(a.RSS, b.RSS) })
	return Spawns{N: n, Start: times[n/2], Ready: ready[n/2], Memory: mem[n/2]}, nil
}

// awaitStarted asks the server for its tools, as a client does right
// after the handshake. stepwise answers the handshake over stdio before
// it has opened its store, and this only once it has: what is measured
// after it is the started server.
func awaitStarted(ctx context.Context, cs *Session) error {
	if _, err := cs.request(ctx, "tools/list", map[string]any{}); err != nil {
		return fmt.Errorf("tools/list after the handshake: %w", err)
	}
	return nil
}

// spawnFigures measures stepwise's start (spawn_ms, idle_rss_mb) against
// the targets, with the TypeScript peer's figures beside them for
// scale when it is available.
func spawnFigures(ctx context.Context, bin, home, durability string, n int, peer *Peer) (spawn, idle Figure, err error) {
	spawn = Figure{Name: "spawn_ms", Unit: "ms", target: valueAtMost(15, "≤ 15 ms")}
	idle = Figure{Name: "idle_rss_mb", Unit: "MB", target: valueAtMost(25, "≤ 25 MB")}
	s, err := spawns(ctx, n, func() (*Session, error) { return stepwiseStdio(ctx, bin, home, durability) })
	if err != nil {
		return spawn, idle, err
	}
	spawn.Value, idle.Value = ms(s.Start), s.Memory.RSS
	spawn.againstTarget(15)
	idle.againstTarget(25)
	peerText := "TS SDK peer: unavailable"
	if peer.Available() {
		if p, err := spawns(ctx, n, func() (*Session, error) { return peer.stdio(ctx) }); err == nil {
			peerText = "TS SDK peer: " + p.String()
		} else {
			peerText += " (" + err.Error() + ")"
		}
	}
	floor, help := "unknown", "unknown"
	if d, err := execFloor(n, "true"); err == nil {
		floor = fmt.Sprintf("%.1f ms", ms(d))
	}
	if d, err := execFloor(n, bin, "--help"); err == nil {
		help = fmt.Sprintf("%.1f ms", ms(d))
	}
	spawn.detail = fmt.Sprintf("median of %d stdio starts (exec → initialize answered and initialized sent); a first tools/list, which waits until the store is open, answered at %.1f ms; exec of /bin/true now: %s; of `stepwise --help` (the binary's start-up — runtime and package initializers — without serving): %s; %s", n, ms(s.Ready), floor, help, peerText)
	idle.detail = fmt.Sprintf("median VmRSS after initialization and a first tools/list, %d starts: %s; %s", n, s.Memory, peerText)
	return spawn, idle, nil
}

// execFloor is the median time to run a command to its end: for
// /bin/true, what starting any process costs on this machine right now;
// for `stepwise --help`, what starting this binary costs before it serves.
// Both are floors under spawn_ms.
func execFloor(n int, name string, args ...string) (time.Duration, error) {
	times := make([]time.Duration, n)
	for i := range times {
		t0 := time.Now()
		if err := exec.Command(name, args...).Run(); err != nil {
			return 0, err
		}
		times[i] = time.Since(t0)
	}
	slices.Sort(times)
	return times[n/2], nil
}
