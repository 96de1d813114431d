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

// toolLoads calls run_get(id) on a session n times sequentially, then n
// times with inFlight calls at once.
func toolLoads(ctx context.Context, cs *Session, id string, n int) (seq, par Load, err error) {
	args := map[string]any{"run_id": id}
	get := func(int) error {
		_, err := call(ctx, cs, "run_get", args)
		return err
	}
	if _, err := drive(warmup(n), 1, get); err != nil {
		return seq, par, err
	}
	if seq, err = drive(n, 1, get); err != nil {
		return seq, par, err
	}
	par, err = drive(n, inFlight, get)
	return seq, par, err
}

// toolcall measures tools/call of run_get on a waiting run of stepwise
// over one transport, beside the same calls to the TypeScript peer's
// trivial tool over the same transport, from the same driver (wire.go).
// start starts stepwise; startPeer starts the peer; floor, when not nil,
// measures the same loads against a server that answers stepwise's
// run_get result without doing anything (see floorServe).
func toolcall(ctx context.Context, name, transport string, n int,
	start func(context.Context) (*Session, error), startPeer func(context.Context) (*Session, error),
	floor func(ctx context.Context, result Result, n int) (seq, par Load, err error)) (Figure, error) {
	f := Figure{Name: name, Unit: "calls/s"}
	seq, par, protocol, result, err := stepwiseLoads(ctx, start, n)
	if err != nil {
		return f, err
	}
	f.Value = seq.PerSecond()
	f.detail = fmt.Sprintf("%d calls over %s; sequential: stepwise %s", n, transport, seq)
	peerSeq, peerPar, peerErr := Load{}, Load{}, error(nil)
	peerProtocol := ""
	if peer, err := startPeer(ctx); err != nil {
		peerErr = err
	} else {
		peerProtocol = peer.Protocol()
		peerSeq, peerPar, peerErr = toolLoads(ctx, peer, "bench", n)
		peer.Close()
	}
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
		if protocol != peerProtocol {
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

// stepwiseLoads starts stepwise, starts a waiting run and measures
// toolLoads of run_get on it; protocol is the version the session
// negotiated, result one run_get result as the server sent it.
func stepwiseLoads(ctx context.Context, start func(context.Context) (*Session, error), n int) (seq, par Load, protocol string, result Result, err error) {
	cs, err := start(ctx)
	if err != nil {
		return seq, par, "", Result{}, err
	}
	defer cs.Close()
	id, err := startWaiting(ctx, cs)
	if err != nil {
		return seq, par, "", Result{}, err
	}
	if seq, par, err = toolLoads(ctx, cs, id, n); err != nil {
		return seq, par, "", Result{}, err
	}
	res, err := call(ctx, cs, "run_get", map[string]any{"run_id": id})
	return seq, par, cs.Protocol(), res, err
}
