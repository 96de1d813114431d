package sqlite

import (
	"context"
	"path/filepath"
	"testing"

	"stepwise.dev/stepwise/store"
	"stepwise.dev/stepwise/store/storetest"
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
