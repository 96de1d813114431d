//go:build unix

package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"stepwise.dev/stepwise/internal/store/postgres/pgtest"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestPostgresRunAndServe: with --database, the example runs to the end on
// PostgreSQL, `runs` lists it from there (the URL from
// STEPWISE_DATABASE_URL this time), and `serve` works on the same database.
func TestPostgresRunAndServe(t *testing.T) {
	db := pgtest.Schema(t)
	bin := sharedBinary(t)
	home := libraryHome(t)
	cmd := exec.Command(bin, "--home", home, "--database", db, "run", "../../examples/team-onboarding.yaml",
		"--answers", "../../examples/answers/team-onboarding.yaml", "--json")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("run: %v\n%s\n%s", err, out.String(), errOut.String())
	}
	if !strings.Contains(out.String(), `"status": "succeeded"`) && !strings.Contains(out.String(), `"status":"succeeded"`) {
		t.Fatalf("run:\n%s", out.String())
	}

	cmd = exec.Command(bin, "--home", home, "runs")
	cmd.Env = append(os.Environ(), "STEPWISE_DATABASE_URL="+db)
	listed, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(listed), "team-onboarding") {
		t.Fatalf("runs: %v\n%s", err, listed)
	}
	// The home's SQLite database was never created.
	if _, err := os.Stat(filepath.Join(home, "stepwise.db")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a SQLite database in the home: %v", err)
	}

	cmd = exec.Command(bin, "--home", home, "--database", db, "serve")
	n := &notes{}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, n.options()).Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	scriptedSession(t, cs, n)
}

// TestDatabaseErrors: a URL that is not PostgreSQL's, or a server that does
// not answer, is a one-line error with exit 2 that never shows the
// password.
func TestDatabaseErrors(t *testing.T) {
	bin := sharedBinary(t)
	for _, db := range []string{
		"postgres://alice:s3cr3tpw@127.0.0.1:1/db?sslmode=disable&connect_timeout=2",
		"mysql://alice:s3cr3tpw@127.0.0.1/db",
		"postgres://alice:s3cr3tpw@127.0.0.1:1/db?sslmode=nonsense",
	} {
		cmd := exec.Command(bin, "--home", t.TempDir(), "--database", db, "runs")
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 {
			t.Errorf("%s: %v, want exit 2\n%s", db, err, out)
		}
		msg := strings.TrimSpace(string(out))
		if strings.Contains(msg, "s3cr3tpw") || strings.Count(msg, "\n") > 0 || msg == "" {
			t.Errorf("%s: %q", db, msg)
		}
	}
}

// TestPostgresGraphByName: on PostgreSQL the library is the database's, so
// `graph NAME` draws a workflow saved through another home (another
// replica) — and says so when the name is in neither.
func TestPostgresGraphByName(t *testing.T) {
	db := pgtest.Schema(t)
	bin := sharedBinary(t)
	save := exec.Command(bin, "--home", t.TempDir(), "--database", db, "save", "../../examples/team-onboarding.yaml")
	if out, err := save.CombinedOutput(); err != nil {
		t.Fatalf("save: %v\n%s", err, out)
	}
	graph := exec.Command(bin, "--home", t.TempDir(), "--database", db, "graph", "team-onboarding")
	var out, errOut bytes.Buffer
	graph.Stdout, graph.Stderr = &out, &errOut
	if err := graph.Run(); err != nil {
		t.Fatalf("graph: %v\n%s", err, errOut.String())
	}
	if !strings.HasPrefix(out.String(), "flowchart TD") {
		t.Fatalf("graph printed:\n%s", out.String())
	}
	missing := exec.Command(bin, "--home", t.TempDir(), "--database", db, "graph", "no-such-workflow")
	got, err := missing.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(got), "no workflow or draft named") {
		t.Fatalf("graph of a missing name: %v\n%s", err, got)
	}
}
