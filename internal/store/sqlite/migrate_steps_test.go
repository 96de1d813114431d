package sqlite

import (
	"context"
	"database/sql"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"stepwise.dev/stepwise/internal/store"
)

// TestStepsMigrationKeepsRowsAndOrder builds a database at the schema
// before migration 0004 with recorded steps, opens it (which migrates),
// and checks that the steps are all there in recording order, and that
// steps recorded afterwards (and an old step recorded again) keep it.
func TestStepsMigrationKeepsRowsAndOrder(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	files, _ := fs.Glob(migrations, "migrations/*.sql")
	slices.Sort(files)
	if _, err := db.ExecContext(ctx, `CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		base := strings.TrimPrefix(f, "migrations/")
		n, _ := strconv.Atoi(strings.SplitN(base, "_", 2)[0])
		if n >= 4 {
			break
		}
		body, _ := migrations.ReadFile(f)
		if _, err := db.ExecContext(ctx, string(body)); err != nil {
			t.Fatal(base, err)
		}
		if _, err := db.ExecContext(ctx, `INSERT INTO schema_migrations VALUES (?, ?)`, n, base); err != nil {
			t.Fatal(err)
		}
	}
	for _, q := range []string{
		`INSERT INTO versions VALUES ('v', 'n', '{}', 1)`,
		`INSERT INTO runs (id, workflow, version, status, rev, event_seq, created_at, updated_at) VALUES ('r', 'n', 'v', 'running', 4, 0, 1, 1)`,
		`INSERT INTO steps (run_id, key, visit, step_id, status, output, attempts, started_at, finished_at) VALUES ('r', 'zeta', 1, 'zeta', 'succeeded', '1', 1, 1, 2)`,
		`INSERT INTO steps (run_id, key, visit, step_id, status, output, attempts, started_at, finished_at) VALUES ('r', 'alpha', 1, 'alpha', 'failed', NULL, 2, 3, 4)`,
		`INSERT INTO steps (run_id, key, visit, step_id, status, output, attempts, started_at, finished_at) VALUES ('r', 'mid', 1, 'mid', 'succeeded', '"x"', 1, 5, 6)`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(q, err)
		}
	}
	db.Close()

	s, err := Open(ctx, path, Options{Durability: Normal})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	keys := func() []string {
		t.Helper()
		steps, err := s.Steps(ctx, "r")
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, st := range steps {
			out = append(out, st.Key+"#"+strconv.Itoa(st.Visit)+":"+st.Status+":"+string(st.Output))
		}
		return out
	}
	if got, want := keys(), []string{"zeta#1:succeeded:1", "alpha#1:failed:", `mid#1:succeeded:"x"`}; !slices.Equal(got, want) {
		t.Fatalf("after migration: %v, want %v", got, want)
	}
	if _, err := s.Commit(ctx, store.Commit{RunID: "r", Rev: 4, Steps: []store.Step{
		{Key: "alpha", Visit: 1, StepID: "alpha", Status: "succeeded", Attempts: 3},
		{Key: "beta", Visit: 1, StepID: "beta", Status: "succeeded", Attempts: 1},
		{Key: "alpha", Visit: 2, StepID: "alpha", Status: "succeeded", Attempts: 1},
	}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Commit(ctx, store.Commit{RunID: "r", Rev: 5, Steps: []store.Step{{Key: "aardvark", Visit: 1, StepID: "aardvark", Status: "skipped"}}}); err != nil {
		t.Fatal(err)
	}
	want := []string{"zeta#1:succeeded:1", "alpha#1:succeeded:", `mid#1:succeeded:"x"`, "beta#1:succeeded:", "alpha#2:succeeded:", "aardvark#1:skipped:"}
	if got := keys(); !slices.Equal(got, want) {
		t.Fatalf("after new commits: %v, want %v", got, want)
	}
}
