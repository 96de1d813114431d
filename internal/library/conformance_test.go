package library_test

import (
	"path/filepath"
	"testing"

	"stepwise.dev/stepwise/internal/library"
	"stepwise.dev/stepwise/internal/library/librarytest"
)

// The home's files pass the conformance suite the database's library
// passes too (store/postgres).
func TestFilesConformance(t *testing.T) {
	librarytest.Run(t, func(t *testing.T, version func([]byte) string) library.Backend {
		dir := t.TempDir()
		return library.New(library.Options{WorkflowsDir: filepath.Join(dir, "workflows"), DraftsDir: filepath.Join(dir, "drafts"),
			PreviousDir: filepath.Join(dir, "previous"), Version: version})
	})
}

func BenchmarkFiles(b *testing.B) {
	librarytest.Benchmark(b, func(b *testing.B) library.Backend {
		dir := b.TempDir()
		return library.New(library.Options{WorkflowsDir: filepath.Join(dir, "workflows"), DraftsDir: filepath.Join(dir, "drafts"),
			PreviousDir: filepath.Join(dir, "previous"), Version: librarytest.Version})
	})
}
