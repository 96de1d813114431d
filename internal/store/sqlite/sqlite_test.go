package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"stepwise.dev/stepwise/internal/store"
	"stepwise.dev/stepwise/internal/store/storetest"
)

func TestConformance(t *testing.T) {
	for _, d := range []string{Full, Normal} {
		t.Run(d, func(t *testing.T) {
			storetest.Run(t, func(t *testing.T) store.Store {
				s, err := Open(context.Background(), filepath.Join(t.TempDir(), "test.db"), Options{Durability: d})
				if err != nil {
					t.Fatal(err)
				}
				return s
			})
		})
	}
}

func TestOpenRejectsUnknownDurability(t *testing.T) {
	if _, err := Open(context.Background(), filepath.Join(t.TempDir(), "x.db"), Options{Durability: "fast"}); err == nil {
		t.Fatal("want an error")
	}
}

func TestReopenKeepsData(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.db")
	ctx := context.Background()
	s, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.PutVersion(ctx, store.Version{Version: "v1", Name: "n", Definition: []byte("{}")}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.GetVersion(ctx, "v1"); err != nil {
		t.Fatal(err)
	}
}

// TestConcurrentOpenOfANewDatabase: several processes (here: stores) may
// create the same database at once; all must open it, and migrate it once.
func TestConcurrentOpenOfANewDatabase(t *testing.T) {
	for round := 0; round < 5; round++ {
		path := filepath.Join(t.TempDir(), "new.db")
		errs := make(chan error, 4)
		for i := 0; i < 4; i++ {
			go func() {
				s, err := Open(context.Background(), path, Options{})
				if err == nil {
					err = s.PutVersion(context.Background(), store.Version{Version: "v", Name: "n", Definition: []byte("{}")})
					s.Close()
				}
				errs <- err
			}()
		}
		for i := 0; i < 4; i++ {
			if err := <-errs; err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
	}
}

func TestChunksCoverEveryCount(t *testing.T) {
	prepared := map[int]bool{}
	for c := 1; c <= maxRows; c++ {
		prepared[c] = true
	}
	for n := 0; n <= 200; n++ {
		sum, parts := 0, chunks(n)
		for i, c := range parts {
			if !prepared[c] || sqlInsertEvents[c] == "" || sqlUpsertSteps[c] == "" {
				t.Fatalf("chunks(%d) uses %d rows, which has no statement", n, c)
			}
			if i > 0 && c > parts[i-1] {
				t.Fatalf("chunks(%d) = %v: not largest first", n, parts)
			}
			sum += c
		}
		if sum != n {
			t.Fatalf("chunks(%d) = %v covers %d rows", n, parts, sum)
		}
		if n > 0 && n <= 8 && len(parts) != 1 {
			t.Errorf("chunks(%d) = %v: up to 8 rows take one statement", n, parts)
		}
		if want := (n + 7) / 8; len(parts) != want {
			t.Errorf("chunks(%d) = %v: want %d statements", n, parts, want)
		}
	}
}

// The larger multi-row statements are prepared after their first use, by
// the writer that used them, and used prepared from then on.
func TestMultiRowStatementsArePreparedOnFirstUse(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "x.db"), Options{Durability: Normal})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.PutVersion(ctx, storeVersion()); err != nil {
		t.Fatal(err)
	}
	r := storeRun(0)
	if _, err := s.CreateRun(ctx, r, []store.Event{{Type: "run.created"}}); err != nil {
		t.Fatal(err)
	}
	six := sqlInsertEvents[6]
	if _, ok := s.stmts[six]; ok {
		t.Fatal("the 6-row insert is prepared when the store opens")
	}
	rev := int64(1)
	for round := range 2 {
		c := stepCommit(r.ID, rev, round)
		for i := range 4 {
			c.Events = append(c.Events, store.Event{Type: fmt.Sprintf("extra.%d", i)})
		}
		res, err := s.Commit(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		rev = res.Rev
		late := s.late.Load()
		if late == nil || (*late)[six] == nil {
			t.Fatalf("round %d: the 6-row insert was not prepared after its use", round)
		}
	}
	if evs, err := s.Events(ctx, r.ID, 0, 0); err != nil || len(evs) != 13 {
		t.Fatalf("%d events, %v; want 13", len(evs), err)
	}
}

// TestConformanceShared races lease claimants on two stores open on one
// file, as two processes on one home would.
func TestConformanceShared(t *testing.T) {
	storetest.RunShared(t, func(t *testing.T) (store.Store, store.Store) {
		path := filepath.Join(t.TempDir(), "shared.db")
		a, err := Open(context.Background(), path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		b, err := Open(context.Background(), path, Options{})
		if err != nil {
			a.Close()
			t.Fatal(err)
		}
		return a, b
	})
}
