package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"time"

	"github.com/jackc/pgx/v5"

	"stepwise.dev/stepwise/internal/service"
	"stepwise.dev/stepwise/internal/store/postgres"
)

// envPostgres names the PostgreSQL server the postgres figures run on: the
// tests' server (.ci/run sets it), where a schema may be created and
// dropped. Unset, the figures are left out.
const envPostgres = "STEPWISE_TEST_DATABASE_URL"

// benchSchema creates a fresh schema on the server at raw and returns a
// URL whose sessions use it and a function that drops it.
func benchSchema(ctx context.Context, raw string) (string, func(), error) {
	conn, err := pgx.Connect(ctx, raw)
	if err != nil {
		return "", nil, fmt.Errorf("connect to %s: %w", postgres.Redact(raw), err)
	}
	defer conn.Close(ctx)
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "stepwise_bench_" + hex.EncodeToString(b[:])
	if _, err := conn.Exec(ctx, `CREATE SCHEMA `+schema); err != nil {
		return "", nil, err
	}
	drop := func() {
		if conn, err := pgx.Connect(context.Background(), raw); err == nil {
			_, _ = conn.Exec(context.Background(), `DROP SCHEMA `+schema+` CASCADE`)
			conn.Close(context.Background())
		}
	}
	u, err := url.Parse(raw)
	if err != nil {
		drop()
		return "", nil, err
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String(), drop, nil
}

// stepsSerialPostgres is stepsSerial on PostgreSQL (Full durability): one
// run of n steps of kind against raw single-row commits on the same
// server, measured just before and just after.
func stepsSerialPostgres(ctx context.Context, dir, raw string, kind stepKind, n, rawN int) (Figure, error) {
	f := Figure{Name: kind.prefix + "serial_postgres", Unit: "steps/s",
		target: ratioAtLeast(0.9, "≥ 90% of raw commits/s")}
	db, drop, err := benchSchema(ctx, raw)
	if err != nil {
		return f, err
	}
	defer drop()
	svc, err := service.Open(ctx, service.Options{Home: dir, Database: db})
	if err != nil {
		return f, err
	}
	defer svc.Close(ctx)
	svc.Actions.Register(effect{})
	l, err := svc.Parse(stepWorkflow(kind, n))
	if err != nil {
		return f, err
	}
	before, err := rawPostgresRate(ctx, db, rawN)
	if err != nil {
		return f, err
	}
	st := svc.Store.(*postgres.Store)
	c0, cpu0, t0 := st.Stats().Commits, cpuTime(), time.Now()
	if err := runToEnd(ctx, svc, l); err != nil {
		return f, err
	}
	elapsed, cpu, c := time.Since(t0), cpuTime()-cpu0, st.Stats().Commits-c0
	after, err := rawPostgresRate(ctx, db, rawN)
	if err != nil {
		return f, err
	}
	f.Value = float64(n) / elapsed.Seconds()
	f.compare("raw PostgreSQL commits/s (full)", (before+after)/2)
	f.detail = fmt.Sprintf("1 run × %d steps, %d commits (%.2f/step), CPU of this process %.0f µs/step (%.0f%% of the wall time; the server's is not counted); raw %d commits before %.0f/s, after %.0f/s",
		n, c, float64(c)/float64(n), perStepUS(cpu, n), 100*cpu.Seconds()/elapsed.Seconds(), rawN, before, after)
	return f, nil
}

// rawPostgresRate is the limit the engine on PostgreSQL is compared with:
// single-row insert transactions in a loop over one pgx connection.
func rawPostgresRate(ctx context.Context, db string, n int) (float64, error) {
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		return 0, err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS bench_raw (id BIGSERIAL PRIMARY KEY, v TEXT)`); err != nil {
		return 0, err
	}
	start := time.Now()
	for range n {
		tx, err := conn.Begin(ctx)
		if err != nil {
			return 0, err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO bench_raw (v) VALUES ($1)`, "x"); err != nil {
			_ = tx.Rollback(ctx)
			return 0, err
		}
		if err := tx.Commit(ctx); err != nil {
			return 0, err
		}
	}
	return float64(n) / time.Since(start).Seconds(), nil
}

// postgresURL is the server of the postgres figures ("" = none).
func postgresURL() string { return os.Getenv(envPostgres) }
