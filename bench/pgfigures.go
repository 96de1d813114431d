package main

import (
	"context"
	"fmt"
)

// peerDBOS is the -peer value that measures the PostgreSQL figures beside
// DBOS Transact.
const peerDBOS = "dbos"

// latencyRounds and throughputRounds are how many rounds of each side a
// latency figure and a throughput figure alternate.
const (
	latencyRounds    = 2
	throughputRounds = 2
)

// measurePG measures stepwise on PostgreSQL beside DBOS Transact for Go
// (bench/peer/dbos) doing the same shapes on the same server, each shape
// by stepwise and right after by DBOS, every measurement on a fresh
// database of its own. Without a server (STEPWISE_TEST_DATABASE_URL) the
// section is skipped with a message; without the peer (no Go module
// proxy) the stepwise figures are measured and their ratios say why not.
func measurePG(ctx context.Context, r *runner, root, bin, tmp string, sz PGSizes) {
	if !r.selected(pgNames...) {
		return
	}
	raw := postgresURL()
	if raw == "" {
		fmt.Fprintf(r.progress, "bench: PostgreSQL figures skipped: %s is not set (a server where the bench may create databases)\n", envPostgres)
		return
	}
	srv := pgServer{raw: raw}
	if err := srv.exec(ctx, `SELECT 1`); err != nil {
		fmt.Fprintf(r.progress, "bench: PostgreSQL figures skipped: %v\n", err)
		return
	}
	var peer *dbosRunner
	unavailable := ""
	r.timed("DBOS peer (go build bench/peer/dbos, its database)", func() error {
		p := buildDBOSPeer(ctx, root, tmp)
		if !p.Available() {
			unavailable = "DBOS peer unavailable"
			fmt.Fprintf(r.progress, " unavailable: %s;", p.reason)
			return nil
		}
		var err error
		if peer, err = newDBOSRunner(ctx, p, srv, tmp); err != nil {
			unavailable = "DBOS peer failed"
			fmt.Fprintf(r.progress, " failed: %v;", err)
		}
		return nil
	})
	if peer != nil {
		defer peer.close()
	}
	// dbos runs a shape of the peer, or says why it did not.
	dbos := func(f *Figure, shape func() (PeerResult, error)) (PeerResult, bool) {
		if peer == nil {
			f.unavailable = unavailable
			return PeerResult{}, false
		}
		res, err := shape()
		if err != nil {
			f.unavailable = "DBOS peer failed"
			f.detail += "; DBOS: " + err.Error()
			return res, false
		}
		return res, true
	}
	perStep := func(c int64, steps int) float64 { return float64(c) / float64(steps) }
	// latencies measures n latencies by stepwise (mine) and by DBOS
	// (theirs) in latencyRounds rounds that alternate, so that a change of
	// the machine's load (other processes share its cores) weighs on both.
	latencies := func(f *Figure, n int, mine func(int) (Latencies, pgCount, error), theirs func(int) (PeerResult, error)) (Latencies, pgCount, Latencies, int64, bool, error) {
		var my, their Latencies
		var c pgCount
		var theirCommits int64
		ok := true
		for i := range latencyRounds {
			k := n / latencyRounds
			if i == 0 {
				k += n % latencyRounds
			}
			lat, ci, err := mine(k)
			if err != nil {
				return nil, c, nil, 0, false, err
			}
			my, c.Server, c.Store = append(my, lat...), c.Server+ci.Server, c.Store+ci.Store
			c.CPU, c.ServerCPU = c.CPU+ci.CPU, c.ServerCPU+ci.ServerCPU
			if !ok {
				continue
			}
			var d PeerResult
			if d, ok = dbos(f, func() (PeerResult, error) { return theirs(k) }); ok {
				their, theirCommits = append(their, d.latencies()...), theirCommits+d.Commits
			}
		}
		return my, c, their, theirCommits, ok, nil
	}

	// throughput measures runs runs × n steps of kind at once by stepwise
	// and by DBOS in throughputRounds rounds that alternate, and gives the
	// steps/s of each over all rounds, with what both committed and spent.
	throughput := func(f *Figure, kind stepKind, runs, n int) (float64, pgCount, PeerResult, bool, error) {
		var c pgCount
		var secs float64
		var their PeerResult
		ok := true
		for range throughputRounds {
			rate, ci, err := pgSteps(ctx, srv, tmp, kind, runs, n)
			if err != nil {
				return 0, c, their, false, err
			}
			secs += float64(runs*n) / rate
			c.Server, c.Store, c.CPU, c.ServerCPU = c.Server+ci.Server, c.Store+ci.Store, c.CPU+ci.CPU, c.ServerCPU+ci.ServerCPU
			if !ok {
				continue
			}
			var d PeerResult
			if d, ok = dbos(f, func() (PeerResult, error) { return peer.concurrent(ctx, runs, n, kind == appendSteps) }); ok {
				their.Seconds, their.Commits = their.Seconds+d.Seconds, their.Commits+d.Commits
				their.CPUS, their.ServerCPUS = their.CPUS+d.CPUS, their.ServerCPUS+d.ServerCPUS
			}
		}
		total := throughputRounds * runs * n
		if ok {
			their.StepsPerS = float64(total) / their.Seconds
		}
		return float64(total) / secs, c, their, ok, nil
	}
	stepFigures := func(rateName, commitsName, what string, kind stepKind, runs, n int, atLeast float64, commits Target) {
		total := throughputRounds * runs * n
		measure := func() (Figure, Figure, error) {
			rf := Figure{Unit: "steps/s", target: ratioAtLeast(atLeast, fmt.Sprintf("≥ %g× DBOS", atLeast))}
			cf := Figure{Unit: "commits/step", target: commits}
			rate, c, d, ok, err := throughput(&rf, kind, runs, n)
			if err != nil {
				return rf, cf, err
			}
			rf.Value, cf.Value = rate, perStep(c.Server, total)
			rf.detail = fmt.Sprintf("%d run(s) × %d %s at once, %d rounds alternating with DBOS; %s", runs, n, what, throughputRounds, c.String(total))
			if ok {
				rf.compare("DBOS steps/s", d.StepsPerS)
				cf.compare("DBOS commits/step", perStep(d.Commits, total))
				rf.detail += fmt.Sprintf("; DBOS (RunAsStep): %.3f commits/step, %s", perStep(d.Commits, total), d.cpu(total))
			}
			cf.detail = rf.detail
			return rf, cf, nil
		}
		if commitsName == "" {
			r.one(rateName, func() (Figure, error) { f, _, err := measure(); return f, err })
		} else {
			r.two(rateName, commitsName, measure)
		}
	}
	// No-op steps are pure: the engine does not wait for one's record
	// before the next, and their records share commits.
	stepFigures("pg_steps_serial", "", "no-op steps", noopSteps, 1, sz.Serial, 1.5, Target{})
	stepFigures("pg_steps_concurrent", "", "no-op steps", noopSteps, sz.Runs, sz.Steps, 3, Target{})
	r.two("pg_effect_10step_p50_ms", "pg_effect_10step_p99_ms", func() (Figure, Figure, error) {
		p50 := Figure{Unit: "ms", target: ratioAtMost(0.5, "p50 ≤ 0.5× DBOS")}
		p99 := Figure{Unit: "ms"}
		lat, c, their, theirCommits, ok, err := latencies(&p50, sz.Effects,
			func(n int) (Latencies, pgCount, error) { return pgEffectRuns(ctx, srv, tmp, n) },
			func(n int) (PeerResult, error) { return peer.effects(ctx, n) })
		if err != nil {
			return p50, p99, err
		}
		p50.Value, p99.Value = ms(lat.Percentile(50)), ms(lat.Percentile(99))
		p50.detail = fmt.Sprintf("%d runs of 10 steps appending to a file, one after another, start to end, in %d rounds alternating with DBOS; %s", sz.Effects, latencyRounds, c.String(10*sz.Effects))
		if ok {
			p50.compare("DBOS p50 ms", ms(their.Percentile(50)))
			p99.compare("DBOS p99 ms", ms(their.Percentile(99)))
			p50.detail += fmt.Sprintf("; DBOS: %.3f commits/step", perStep(theirCommits, 10*sz.Effects))
		} else {
			p99.unavailable = p50.unavailable
		}
		p99.detail = p50.detail
		return p50, p99, nil
	})
	// Effect steps: the engine waits for each one's record before the
	// next starts, as DBOS checkpoints every step before the next.
	stepFigures("pg_effect_steps_serial", "pg_effect_commits_serial", "steps appending to a file", appendSteps, 1, sz.Serial, 1.5, valueAtMost(1, "≤ 1"))
	stepFigures("pg_effect_steps_concurrent", "pg_effect_commits_concurrent", "steps appending to a file", appendSteps, sz.Runs, sz.Steps, 3, valueAtMost(0.1, "≤ 0.1"))
	r.two("pg_continue_p50_ms", "pg_continue_p99_ms", func() (Figure, Figure, error) {
		p50, p99 := Figure{Unit: "ms"}, Figure{Unit: "ms"}
		lat, c, their, theirCommits, ok, err := latencies(&p50, sz.Continues,
			func(n int) (Latencies, pgCount, error) { return pgContinues(ctx, srv, tmp, n) },
			func(n int) (PeerResult, error) { return peer.continues(ctx, n) })
		if err != nil {
			return p50, p99, err
		}
		p50.Value, p99.Value = ms(lat.Percentile(50)), ms(lat.Percentile(99))
		p50.detail = fmt.Sprintf("%d answers to ask-loop runs in this process (run_continue behind the MCP surface: the answer, then the view of the next pause), in %d rounds alternating with DBOS; %s", len(lat), latencyRounds, c.String(len(lat)))
		if ok {
			p50.compare("DBOS p50 ms", ms(their.Percentile(50)))
			p99.compare("DBOS p99 ms", ms(their.Percentile(99)))
			p50.detail += fmt.Sprintf("; DBOS: a workflow that Recv()s the answer and SetEvent()s the next question, answered by Send() and GetEvent() in the same process, %.3f commits/answer", perStep(theirCommits, sz.Continues))
		} else {
			p99.unavailable = p50.unavailable
		}
		p99.detail = p50.detail
		return p50, p99, nil
	})
	r.two("pg_continue_stdio_p50_ms", "pg_continue_stdio_p99_ms", func() (Figure, Figure, error) {
		p50, p99 := Figure{Unit: "ms"}, Figure{Unit: "ms"}
		lat, err := pgContinueStdio(ctx, srv, bin, tmp, sz.Continues)
		if err != nil {
			return p50, p99, err
		}
		p50.Value, p99.Value = ms(lat.Percentile(50)), ms(lat.Percentile(99))
		p50.detail = fmt.Sprintf("%d sequential run_continue over stdio to the built server (--database, --durability full); DBOS has no such surface", len(lat))
		p99.detail = p50.detail
		return p50, p99, nil
	})
	replicas := func(name, what string, kind stepKind) {
		r.one(name, func() (Figure, error) {
			f := Figure{Unit: "steps/s", target: ratioAtLeast(0.8, "≥ 80% of 1 replica")}
			one, many, err := pgReplicas(ctx, srv, tmp, kind, 3, sz.Runs, sz.Steps)
			if err != nil {
				return f, err
			}
			f.Value = many
			f.compare("1 replica steps/s", one)
			f.detail = fmt.Sprintf("%d runs × %d %s shared by 3 replica processes on one database (each drives the runs it starts) vs all in 1 replica process; rounds 1, 3, 3, 1, means; the replicas and the server share this machine's cores", sz.Runs, sz.Steps, what)
			return f, nil
		})
	}
	replicas("pg_replicas_3", "no-op steps", noopSteps)
	replicas("pg_replicas_3_effect", "steps appending to a file", appendSteps)
}
