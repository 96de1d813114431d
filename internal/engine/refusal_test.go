package engine

import (
	"context"
	"path/filepath"
	"testing"

	"stepwise.dev/stepwise/internal/store"
	"stepwise.dev/stepwise/internal/store/sqlite"
)

// Refusals of an open pause count up, are the run's last event (so that
// another engine on the store reads them), and stop with the pause: an
// answered pause records none and reads none.
func TestRecordRefusal(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "t.db")
	db, err := sqlite.Open(ctx, path, sqlite.Options{Durability: sqlite.Normal})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	eng, err := New(Config{Store: db, Key: testKey})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close(ctx)
	id := startOn(t, eng, "version: 1\nname: r\nsteps:\n  - id: q\n    ask: {prompt: \"Name?\", type: string, pattern: '^[A-Z]'}\n")
	if st := awaitOn(t, eng, id); st != store.StatusWaiting {
		t.Fatalf("status %s", st)
	}
	ps, err := eng.Pauses(ctx, id)
	if err != nil || len(ps) != 1 {
		t.Fatalf("pauses %v %v", ps, err)
	}
	p := ps[0]
	if r, err := eng.Refusal(ctx, id, p.Seq); err != nil || r.Count != 0 {
		t.Fatalf("before any refusal: %+v %v", r, err)
	}
	for n := 1; n <= 2; n++ {
		r, ok, err := eng.RecordRefusal(ctx, id, p.Seq, "bad")
		if err != nil || !ok || r.Count != n {
			t.Fatalf("refusal %d: %+v %v %v", n, r, ok, err)
		}
	}
	other, err := New(Config{Store: db, Key: testKey})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(ctx)
	if r, err := other.Refusal(ctx, id, p.Seq); err != nil || r.Count != 2 || r.Problem != "bad" {
		t.Fatalf("read by another engine: %+v %v", r, err)
	}
	if r, _ := eng.Refusal(ctx, id, p.Seq+1); r.Count != 0 {
		t.Fatalf("another pause's refusals: %+v", r)
	}
	// The refusals moved the run's revision: the answer still goes through.
	if _, err := eng.Continue(ctx, p.Token, "Ada"); err != nil {
		t.Fatal(err)
	}
	if st := awaitOn(t, eng, id); st != store.StatusSucceeded {
		t.Fatalf("after the answer: %s", st)
	}
	if _, ok, err := eng.RecordRefusal(ctx, id, p.Seq, "late"); ok || err != nil {
		t.Fatalf("a refusal of an answered pause: %v %v", ok, err)
	}
	if r, _ := eng.Refusal(ctx, id, p.Seq); r.Count != 0 {
		t.Fatalf("refusals of a finished run: %+v", r)
	}
}
