// Package pgtest gives tests a PostgreSQL database of their own on the
// test server named by STEPWISE_TEST_DATABASE_URL (.ci/run sets it): a
// fresh schema, dropped when the test ends. Tests skip without it.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
)

// Env names the variable that holds the test server's URL.
const Env = "STEPWISE_TEST_DATABASE_URL"

// URL returns the test server's URL, or skips the test.
func URL(t testing.TB) string {
	t.Helper()
	u := os.Getenv(Env)
	if u == "" {
		t.Skip(Env + " is not set: run with e.g. " + Env + "=postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable (.ci/run sets it)")
	}
	return u
}

// Schema creates an empty schema on the test server, dropped when the test
// ends, and returns a URL whose sessions use it.
func Schema(t testing.TB) string {
	t.Helper()
	raw := URL(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, raw)
	if err != nil {
		t.Fatalf("connect to the test database: %v", err)
	}
	defer conn.Close(ctx)
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "stepwise_test_" + hex.EncodeToString(b[:])
	if _, err := conn.Exec(ctx, `CREATE SCHEMA `+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn, err := pgx.Connect(ctx, raw)
		if err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, `DROP SCHEMA `+schema+` CASCADE`); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}
