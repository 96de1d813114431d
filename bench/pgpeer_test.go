package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestCommitsCountsClosedSessions: a session's commits reach
// pg_stat_database only when it reports them (at its end, or once a
// second), so commits must wait for the sessions to end to see them all.
func TestCommitsCountsClosedSessions(t *testing.T) {
	raw := postgresURL()
	if raw == "" {
		t.Skip(envPostgres + " is not set")
	}
	ctx := context.Background()
	srv := pgServer{raw: raw}
	name, db, drop, err := srv.createDB(ctx, "bench_test")
	if err != nil {
		t.Fatal(err)
	}
	defer drop()
	c0, err := srv.commits(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	const n = 25
	for range n {
		if _, err := conn.Exec(ctx, `SELECT 1`); err != nil {
			t.Fatal(err)
		}
	}
	conn.Close(ctx)
	c1, err := srv.commits(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	// pgx's connection itself runs no transaction of its own; allow a
	// couple for what a server version might add.
	if d := c1 - c0; d < n || d > n+3 {
		t.Errorf("commits counted %d transactions of a session that committed %d", d, n)
	}
}

// TestDBOSPeerUnavailable: without the peer's module (or the Go module
// proxy) the peer is unavailable with a reason, and the PostgreSQL
// figures say so instead of failing.
func TestDBOSPeerUnavailable(t *testing.T) {
	p := buildDBOSPeer(context.Background(), t.TempDir(), t.TempDir())
	if p.Available() || !strings.Contains(p.reason, "go build bench/peer/dbos") {
		t.Fatalf("peer in an empty directory: available %v, reason %q", p.Available(), p.reason)
	}
}

// TestPGSkippedWithoutServer: without a server the section is skipped
// with a message and no figure.
func TestPGSkippedWithoutServer(t *testing.T) {
	t.Setenv(envPostgres, "")
	var progress bytes.Buffer
	r := &runner{progress: &progress}
	measurePG(context.Background(), r, t.TempDir(), "", t.TempDir(), smokeSizes.PG)
	if len(r.figs) != 0 || r.err != nil || !strings.Contains(progress.String(), "PostgreSQL figures skipped") {
		t.Errorf("figures %v, error %v, progress %q", r.figs, r.err, progress.String())
	}
}

// TestPGFigures measures the PostgreSQL figures at the smoke sizes beside
// the DBOS peer when the test server is set; the peer is built from this
// module's bench/peer/dbos (the test is skipped when it cannot be, as
// without the Go module proxy).
func TestPGFigures(t *testing.T) {
	raw := postgresURL()
	if raw == "" {
		t.Skip(envPostgres + " is not set")
	}
	if testing.Short() {
		t.Skip("builds the DBOS peer and the server")
	}
	ctx := context.Background()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	if p := buildDBOSPeer(ctx, root, tmp); !p.Available() {
		t.Skip(p.reason)
	}
	bin, err := buildBinary(ctx, tmp)
	if err != nil {
		t.Fatal(err)
	}
	var progress bytes.Buffer
	r := &runner{progress: &progress}
	measurePG(ctx, r, root, bin, tmp, smokeSizes.PG)
	if r.err != nil {
		t.Fatalf("%v\n%s", r.err, progress.String())
	}
	if len(r.figs) != len(pgNames) {
		t.Fatalf("%d figures, want %d (%s)", len(r.figs), len(pgNames), progress.String())
	}
	for i, f := range r.figs {
		if f.Name != pgNames[i] {
			t.Errorf("figure %d is %s, want %s", i, f.Name, pgNames[i])
		}
		if f.unavailable != "" {
			t.Errorf("%s: %s (%s)", f.Name, f.unavailable, f.detail)
		}
		if strings.HasPrefix(f.Name, "pg_continue_stdio") {
			if f.Value <= 0 {
				t.Errorf("%s = %v", f.Name, f.Value)
			}
			continue
		}
		finitePositive(t, f)
	}
}
