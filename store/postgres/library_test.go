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
