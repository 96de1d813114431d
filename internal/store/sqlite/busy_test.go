package sqlite

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"stepwise.dev/stepwise/internal/store"
)

// A write that meets another process's write lock past the busy timeout
// is ErrUnavailable (classified by the driver's error code, not its text)
// and writes nothing; once the lock is gone it goes through.
func TestBusyDatabaseIsUnavailable(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "busy.db")
	a, err := Open(ctx, path, Options{BusyTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Open(ctx, path, Options{BusyTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := a.PutVersion(ctx, store.Version{Version: "v", Name: "wf", Definition: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	res, err := a.CreateRun(ctx, store.Run{ID: "r", Workflow: "wf", Version: "v", Status: store.StatusRunning}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The other process holds the write lock.
	conn, err := b.Writer().Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
		t.Fatal(err)
	}
	commit := store.Commit{RunID: "r", Rev: res.Rev, Events: []store.Event{{Type: "x"}}}
	if _, err := a.Commit(ctx, commit); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("commit against a held lock: %v, want ErrUnavailable", err)
	}
	if _, err := conn.ExecContext(ctx, `ROLLBACK`); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Commit(ctx, commit); err != nil {
		t.Fatalf("commit once the lock is gone: %v", err)
	}
	if got, err := a.GetRun(ctx, "r"); err != nil || got.Rev != res.Rev+1 {
		t.Fatalf("run %+v %v: want one commit", got, err)
	}
}
