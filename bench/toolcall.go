package main

import (
	"context"
	"fmt"
)

// warmup is how many calls are made before a load of n and not timed:
// the first calls of a session pay for lazy initialization on both sides,
// and the TypeScript peer's JIT compiler needs a few hundred calls to
// settle (with 50, its HTTP figure in -quick came out at a third of the
// -full one).
func warmup(n int) int { return min(500, 10*n) }

// inFlight is the concurrent load of the tool-call figures.
const inFlight = 8

// rounds is how many turns each tool-call load is cut into: the two
// servers take turns (stepwise, peer; then peer, stepwise; …), so that
// what the machine's other work does to the timings during the
// measurement falls on both sides alike. Measured one after the other,
// the peer's figure moved by 15% between runs and the ratio with it.
const rounds = 6

// toolLoad makes run_get(id) calls on a session.
func toolLoad(ctx context.Context, cs *Session, id string) func(n, inFlight int) (Load, error) {
	args := map[string]any{"run_id": id}
	get := func(int) error {
		_, err := call(ctx, cs, "run_get", args)
		return err
	}
	return func(n, inFlight int) (Load, error) { return drive(n, inFlight, get) }
}

// toolLoads measures n sequential calls, then n with inFlight at once, of
// each load in loads (one per server), after warming each up; the loads
// take turns in rounds. A nil load is skipped.
func toolLoads(n int, loads ...func(n, inFlight int) (Load, error)) (seq, par []Load, err error) {
	seq, par = make([]Load, len(loads)), make([]Load, len(loads))
	for _, l := range loads {
		if l == nil {
			continue
		}
		if _, err := l(warmup(n), 1); err != nil {
			return nil, nil, err
		}
	}
	for _, phase := range []struct {
		out      []Load
		inFlight int
	}{{seq, 1}, {par, inFlight}} {
		for r := range rounds {
			calls := n/rounds + min(1, max(0, n%rounds-r)) // n in all
			for k := range loads {
				i := k
				if r%2 == 1 {
					i = len(loads) - 1 - k // the other goes first
				}
				if loads[i] == nil || calls == 0 {
					continue
				}
				l, err := loads[i](calls, phase.inFlight)
				if err != nil {
					return nil, nil, err
				}
				phase.out[i] = phase.out[i].add(l)
			}
		}
	}
	return seq, par, nil
}

// toolcall measures tools/call of run_get on a waiting run of stepwise
// over one transport, beside the same calls to the TypeScript peer's
// trivial tool over the same transport, from the same driver (wire.go),
// the two taking turns (see rounds). start starts stepwise; startPeer
// starts the peer; floor, when not nil, measures the same loads against a
// server that answers stepwise's run_get result without doing anything
// (see floorServe).
func toolcall(ctx context.Context, name, transport string, n int,
	start func(context.Context) (*Session, error), startPeer func(context.Context) (*Session, error),
	floor func(ctx context.Context, result Result, n int) (seq, par Load, err error)) (Figure, error) {
	f := Figure{Name: name, Unit: "calls/s"}
	cs, err := start(ctx)
	if err != nil {
		return f, err
	}
	defer cs.Close()
	id, err := startWaiting(ctx, cs)
	if err != nil {
		return f, err
	}
	var peerLoad func(n, inFlight int) (Load, error)
	peerProtocol := ""
	peer, peerErr := startPeer(ctx)
	if peerErr == nil {
		defer peer.Close()
		peerProtocol = peer.Protocol()
		peerLoad = toolLoad(ctx, peer, "bench")
	}
	seqs, pars, err := toolLoads(n, toolLoad(ctx, cs, id), peerLoad)
	if err != nil {
		return f, err
	}
	seq, par, peerSeq, peerPar := seqs[0], pars[0], seqs[1], pars[1]
	result, err := call(ctx, cs, "run_get", map[string]any{"run_id": id})
	if err != nil {
		return f, err
	}
	f.Value = seq.PerSecond()
	f.detail = fmt.Sprintf("%d calls over %s, each load in %d turns alternating with the peer's; sequential: stepwise %s", n, transport, rounds, seq)
	parRatio := 0.0
	if peerErr != nil {
		f.compare("TS SDK peer, same calls, sequential", 0)
		f.unavailable = "peer unavailable"
		f.detail += fmt.Sprintf("; %d in flight: stepwise %s; TS peer unavailable: %v", inFlight, par, peerErr)
	} else {
		f.compare("TS SDK peer, same calls, sequential", peerSeq.PerSecond())
		parRatio = par.PerSecond() / peerPar.PerSecond()
		f.detail += fmt.Sprintf(", TS %s; %d in flight: stepwise %s, TS %s (ratio %.2f)",
			peerSeq, inFlight, par, peerPar, parRatio)
		if protocol := cs.Protocol(); protocol != peerProtocol {
			f.detail += fmt.Sprintf("; stepwise chose protocol %s, the peer %s", protocol, peerProtocol)
		}
	}
	if floor != nil {
		f.detail += floorDetail(ctx, floor, result, n, peerSeq, peerPar, peerErr == nil)
	}
	f.target = Target{Text: "≥ 1.5× TS (sequential and 8 in flight)", met: func(f Figure) bool {
		return f.Ratio != nil && *f.Ratio >= 1.5 && parRatio >= 1.5
	}}
	return f, nil
}

// floorDetail measures the floor server and says what it achieved, beside
// the peer's figures when there are some.
func floorDetail(ctx context.Context, floor func(context.Context, Result, int) (Load, Load, error), result Result, n int, peerSeq, peerPar Load, withPeer bool) string {
	seq, par, err := floor(ctx, result, n)
	if err != nil {
		return fmt.Sprintf("; floor server: %v", err)
	}
	text := fmt.Sprintf("; the floor (a JSON-RPC loop with no SDK and no work answering stepwise's run_get result, protocol %s): %s, %d in flight %s",
		floorProtocol, seq, inFlight, par)
	if withPeer {
		text += fmt.Sprintf(" (%.2f× and %.2f× the TS peer)", seq.PerSecond()/peerSeq.PerSecond(), par.PerSecond()/peerPar.PerSecond())
	}
	return text
}
