package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/pprof"

	"stepwise.dev/stepwise/internal/mcpserver"
	"stepwise.dev/stepwise/internal/service"
)

// profileAll writes CPU profiles of the loops behind the figures into dir,
// for `go tool pprof -top`: the serial and the concurrent step loops of
// both durabilities, of no-op and of effect steps, driven in this process
// as the figures drive them,
// run_get over streamable HTTP, and run_get and run_continue over stdio. A
// server in another process cannot be profiled from here, so for those the
// server runs in this process behind a loopback listener or real pipes,
// with the bench's client at their other ends;
// its goroutines carry the label side=server, so that
// `-tagfocus side=server` leaves the client out.
// With pg (-peer dbos), the loops of the PostgreSQL figures are profiled
// instead (profilePG).
func profileAll(ctx context.Context, dir string, sz Sizes, pg bool, progress io.Writer) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "stepwise-profile-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if pg {
		return profilePG(ctx, dir, tmp, sz.PG, progress)
	}
	for _, kind := range []stepKind{noopSteps, effectSteps} {
		for _, d := range []string{"full", "normal"} {
			serial := func() error {
				return stepLoop(ctx, filepath.Join(tmp, kind.prefix+"serial-"+d), d, kind, 1, sz.SerialSteps)
			}
			concurrent := func() error {
				return stepLoop(ctx, filepath.Join(tmp, kind.prefix+"concurrent-"+d), d, kind, sz.ConcurrentRuns, sz.ConcurrentSteps)
			}
			if err := profile(filepath.Join(dir, kind.prefix+"serial_"+d+".pprof"), progress, serial); err != nil {
				return err
			}
			if err := profile(filepath.Join(dir, kind.prefix+"concurrent_"+d+".pprof"), progress, concurrent); err != nil {
				return err
			}
		}
	}
	home, err := newHome(tmp, "mcp")
	if err != nil {
		return err
	}
	err = serveHTTPInProcess(ctx, home, func(cs *Session) error {
		return profileRunGet(ctx, cs, filepath.Join(dir, "run_get_http.pprof"), 5*sz.Calls, progress)
	})
	if err != nil {
		return err
	}
	return serveInProcess(ctx, home, func(cs *Session) error {
		if err := profileRunGet(ctx, cs, filepath.Join(dir, "run_get_stdio.pprof"), 10*sz.Calls, progress); err != nil {
			return err
		}
		return profile(filepath.Join(dir, "continue_stdio.pprof"), progress, func() error {
			_, err := continueLoop(ctx, cs, 2*sz.Continues)
			return err
		})
	})
}

// profilePG writes CPU profiles of the loops of the PostgreSQL figures:
// serial and concurrent no-op steps, the 10-step effect runs, concurrent
// effect steps and the in-process continues. The profile covers this
// process only: what PostgreSQL's server processes spend is not in it.
func profilePG(ctx context.Context, dir, tmp string, sz PGSizes, progress io.Writer) error {
	raw := postgresURL()
	if raw == "" {
		return fmt.Errorf("-peer dbos -cpuprofile: %s is not set", envPostgres)
	}
	srv := pgServer{raw: raw}
	loops := []struct {
		name string
		fn   func() error
	}{
		{"pg_steps_serial", func() error { _, _, err := pgSteps(ctx, srv, tmp, noopSteps, 1, sz.Serial); return err }},
		{"pg_steps_concurrent", func() error { _, _, err := pgSteps(ctx, srv, tmp, noopSteps, sz.Runs, sz.Steps); return err }},
		{"pg_effect_10step", func() error { _, _, err := pgEffectRuns(ctx, srv, tmp, sz.Effects); return err }},
		{"pg_effect_concurrent", func() error { _, _, err := pgSteps(ctx, srv, tmp, appendSteps, sz.Runs, sz.Steps); return err }},
		{"pg_continue", func() error { _, _, err := pgContinues(ctx, srv, tmp, sz.Continues); return err }},
	}
	for _, l := range loops {
		if err := profile(filepath.Join(dir, l.name+".pprof"), progress, l.fn); err != nil {
			return err
		}
	}
	return nil
}

// profile runs fn under the CPU profiler and writes the profile to path.
func profile(path string, progress io.Writer, fn func() error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := pprof.StartCPUProfile(f); err != nil {
		return err
	}
	err = fn()
	pprof.StopCPUProfile()
	if err == nil {
		fmt.Fprintf(progress, "bench: wrote %s\n", path)
	}
	return err
}

// stepLoop runs runs × n steps of kind at once on a fresh home, as the
// step figures do.
func stepLoop(ctx context.Context, dir, durability string, kind stepKind, runs, n int) error {
	svc, l, err := stepHome(ctx, dir, durability, kind, n)
	if err != nil {
		return err
	}
	defer svc.Close(ctx)
	return runAll(ctx, svc, l, runs)
}

// serveInProcess serves home's MCP surface in this process over a pair of
// pipes, as `stepwise serve` does over stdin and stdout, and hands fn the
// bench's client connected at their other ends.
func serveInProcess(ctx context.Context, home string, fn func(cs *Session) error) error {
	srv, ctx, stop, err := startInProcess(ctx, home)
	if err != nil {
		return err
	}
	defer stop()
	toServer, fromClient, err := os.Pipe()
	if err != nil {
		return err
	}
	fromServer, toClient, err := os.Pipe()
	if err != nil {
		return err
	}
	done := make(chan struct{})
	pprof.Do(ctx, pprof.Labels("side", "server"), func(ctx context.Context) {
		go func() {
			defer close(done)
			ss, err := srv.ConnectStdio(ctx, toServer, toClient)
			if err == nil {
				_ = ss.Wait()
			}
		}()
	})
	cs, err := connect(ctx, newStdioWire(fromClient, fromServer), nil)
	if err != nil {
		return err
	}
	defer func() {
		cs.Close()
		toServer.Close()
		toClient.Close()
		<-done
	}()
	return fn(cs)
}

// serveHTTPInProcess serves home's MCP surface in this process over
// streamable HTTP on a loopback listener, as `stepwise serve --http` does,
// and hands fn the bench's HTTP client connected to it. The server's
// requests carry the label side=server.
func serveHTTPInProcess(ctx context.Context, home string, fn func(cs *Session) error) error {
	srv, ctx, stop, err := startInProcess(ctx, home)
	if err != nil {
		return err
	}
	defer stop()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	h := srv.HTTPHandler(mcpserver.HTTPOptions{})
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pprof.Do(r.Context(), pprof.Labels("side", "server"), func(context.Context) { h.ServeHTTP(w, r) })
	})}
	go func() { _ = hs.Serve(ln) }()
	defer hs.Close()
	cs, err := connect(ctx, newHTTPWire("http://"+ln.Addr().String()+"/mcp"), nil)
	if err != nil {
		return err
	}
	defer cs.Close()
	return fn(cs)
}

// startInProcess opens home's service and starts an MCP server on it in
// this process, as `stepwise serve` does; the context it returns ends
// with stop, which also closes the server and the service.
func startInProcess(ctx context.Context, home string) (*mcpserver.Server, context.Context, func(), error) {
	svc, err := service.Open(ctx, service.Options{Home: home, Durability: serverDurability})
	if err != nil {
		return nil, nil, nil, err
	}
	srv := mcpserver.New(svc, mcpserver.Options{Version: "bench"})
	sctx, cancel := context.WithCancel(ctx)
	srv.Start(sctx)
	stop := func() {
		cancel()
		srv.Close()
		svc.Close(ctx)
	}
	return srv, sctx, stop, nil
}

// profileRunGet profiles calls sequential run_get of a waiting run on cs
// into path.
func profileRunGet(ctx context.Context, cs *Session, path string, calls int, progress io.Writer) error {
	id, err := startWaiting(ctx, cs)
	if err != nil {
		return err
	}
	args := map[string]any{"run_id": id}
	return profile(path, progress, func() error {
		_, err := drive(calls, 1, func(int) error {
			_, err := call(ctx, cs, "run_get", args)
			return err
		})
		return err
	})
}
