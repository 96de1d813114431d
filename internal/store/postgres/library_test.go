package postgres

import (
	"context"
	"testing"

	"stepwise.dev/stepwise/internal/store/postgres/pgtest"

	"stepwise.dev/stepwise/internal/library"
	"stepwise.dev/stepwise/internal/library/librarytest"
)

// The database's library passes the suite the home's files pass.
func TestLibraryConformance(t *testing.T) {
	pgtest.URL(t)
	librarytest.Run(t, func(t *testing.T, version func([]byte) string) library.Backend {
		s, err := Open(context.Background(), pgtest.Schema(t), Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s.Library(version)
	})
}

func BenchmarkLibrary(b *testing.B) {
	pgtest.URL(b)
	librarytest.Benchmark(b, func(b *testing.B) library.Backend {
		s, err := Open(context.Background(), pgtest.Schema(b), Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		return s.Library(librarytest.Version)
	})
}
