package service

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"stepwise.dev/stepwise/internal/library"
	"stepwise.dev/stepwise/internal/store"
)

// The rows kept for run views stay at maxViewReads however many runs are
// read, the most recently read kept.
func TestViewReadsAreBounded(t *testing.T) {
	var c viewReads
	for i := range maxViewReads + 10 {
		c.keep(store.Run{ID: fmt.Sprintf("run-%d", i), Rev: 1}, viewRows{})
	}
	if n := c.rows().Len(); n != maxViewReads {
		t.Fatalf("%d runs kept, want the bound %d", n, maxViewReads)
	}
	if _, ok := c.get(store.Run{ID: "run-0", Rev: 1}); ok {
		t.Fatal("the least recently read run is still kept")
	}
	if _, ok := c.get(store.Run{ID: fmt.Sprintf("run-%d", maxViewReads+9), Rev: 1}); !ok {
		t.Fatal("the most recently read run is not kept")
	}
}

// The library summaries kept stay at their bound however many files are
// summarized (a file that fell out is parsed again).
func TestSummariesAreBounded(t *testing.T) {
	defer func(n int) { maxSummaries = n }(maxSummaries)
	maxSummaries = 3
	s, err := Open(context.Background(), Options{Home: t.TempDir(), Durability: "normal"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	dir := t.TempDir()
	doc := []byte("version: 1\nname: w\nsteps:\n  - {id: a, uses: noop}\n")
	n := maxSummaries + 5
	for i := range n {
		p := filepath.Join(dir, fmt.Sprintf("w%d.yaml", i))
		if err := os.WriteFile(p, doc, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.summarize(library.Saved, library.Entry{Name: "w", Path: p}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if got := s.summaries.entries.Len(); got != maxSummaries {
		t.Fatalf("%d summaries kept, want the bound %d", got, maxSummaries)
	}
	if _, parsed, err := s.summarize(library.Saved, library.Entry{Name: "w", Path: filepath.Join(dir, "w0.yaml")}, nil); err != nil || !parsed {
		t.Fatalf("the first file, fallen out: parsed %v, %v", parsed, err)
	}
}
