package postgres

import (
	"context"
	"testing"

	"stepwise.dev/stepwise/library"
	"stepwise.dev/stepwise/library/librarytest"
)

// The database's library passes the suite the home's files pass.
func TestLibraryConformance(t *testing.T) {
	testURL(t)
	librarytest.Run(t, func(t *testing.T, version func([]byte) string) library.Backend {
		s, err := Open(context.Background(), freshSchema(t), Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s.Library(version)
	})
}

func BenchmarkLibrary(b *testing.B) {
	testURL(b)
	librarytest.Benchmark(b, func(b *testing.B) library.Backend {
		s, err := Open(context.Background(), freshSchema(b), Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		return s.Library(librarytest.Version)
	})
}
