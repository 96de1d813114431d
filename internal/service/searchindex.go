package service

import (
	"context"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"stepwise.dev/stepwise/internal/library"
	"stepwise.dev/stepwise/internal/search"
)

// searchState keeps the search indexes between queries.
//
// Listing a library of 10,000 files costs about 60–90 ms even when every
// file is cached (one stat each), and parsing them all about 2 s, so the
// workflow index is built from ListWorkflows and a query only checks, in
// microseconds, whether the library may have changed since:
//
//   - the library directory's modification time moved (a file was added,
//     removed or renamed — editors that save by renaming included);
//   - some other listing (workflow_list, exposed workflows) re-parsed a
//     file that changed in place (the summary cache's generation moved);
//   - InvalidateSearch was called (the service's own writes call it);
//   - the last listing began so soon after the directory's last change
//     that a further change could have left its modification time as it
//     was (a "racy" snapshot, as git calls its index entries): listed
//     again until that time has passed.
//
// A file rewritten in place without any of these is seen by a listing
// started in the background once the index is older than recheck: that is
// the bound on staleness, and no query waits for it.
type searchState struct {
	// mu serializes rebuilds; readers take the current snapshot
	// without it.
	mu      sync.Mutex
	lib     atomic.Pointer[librarySnapshot]
	actions atomic.Pointer[actionSnapshot]
	invalid atomic.Bool

	// recheck is how old an index may get before a background listing
	// looks for files changed in place (default defaultRecheck).
	recheck time.Duration

	bgMu      sync.Mutex
	bgRunning bool
	bgClosed  bool
	bgCancel  context.CancelFunc
	bg        sync.WaitGroup
}

// defaultRecheck bounds how long an in-place change can go unseen.
const defaultRecheck = 5 * time.Second

// librarySnapshot is the index of the library as one listing saw it.
type librarySnapshot struct {
	index     *search.Index
	workflows []WorkflowSummary
	// dir is the library directory's state before the listing, gen the
	// summary cache's generation, listedAt when the listing began.
	dir      dirState
	gen      uint64
	listedAt time.Time
}

// dirState is what a stat of the library directory says.
type dirState struct {
	found bool
	mod   time.Time
}

// InvalidateSearch makes the next search list the library again. The
// service calls it when it writes to the library; anything else that
// changes library files in place and needs the next search to see the
// change at once may call it too.
func (s *Service) InvalidateSearch() { s.search.invalid.Store(true) }

// libraryIndex returns an index of the library that reflects every change
// the checks above can see.
func (s *Service) libraryIndex(ctx context.Context) (*librarySnapshot, error) {
	if snap := s.search.lib.Load(); snap != nil && s.fresh(snap) {
		if time.Since(snap.listedAt) > s.search.recheckEvery() {
			s.refreshInBackground()
		}
		return snap, nil
	}
	return s.refreshLibrary(ctx, false)
}

// fresh reports whether nothing says the library changed since snap.
func (s *Service) fresh(snap *librarySnapshot) bool {
	if s.search.invalid.Load() || s.summaries.generation() != snap.gen {
		return false
	}
	dir := s.libraryDir()
	if dir != snap.dir {
		return false
	}
	return !racy(dir, snap.listedAt)
}

// racy reports whether a listing that began at listed could have missed a
// change that left the directory's modification time unchanged: file
// systems with whole-second times (FAT keeps two) stamp every change of a
// second alike, the others stamp times from a clock that ticks every few
// milliseconds.
func racy(dir dirState, listed time.Time) bool {
	if !dir.found {
		return false
	}
	window := 50 * time.Millisecond
	if dir.mod.Nanosecond() == 0 {
		window = 2 * time.Second
	}
	d := listed.Sub(dir.mod)
	return d < window && d > -window
}

func (s *Service) libraryDir() dirState {
	if !s.filesLibrary() {
		return dirState{} // the database's: its changes invalidate the index
	}
	info, err := os.Stat(s.Library.Dir(library.Saved))
	if err != nil {
		return dirState{}
	}
	return dirState{found: true, mod: info.ModTime()}
}

// refreshLibrary lists the library and swaps in a new index if the listing
// differs from the current one. Unless forced it first checks again,
// under the lock, whether a concurrent refresh already did the work.
func (s *Service) refreshLibrary(ctx context.Context, force bool) (*librarySnapshot, error) {
	s.search.mu.Lock()
	defer s.search.mu.Unlock()
	old := s.search.lib.Load()
	if old != nil && !force && s.fresh(old) {
		return old, nil
	}
	// Everything is read before listing: a change during the listing
	// then shows at the next query.
	s.search.invalid.Store(false)
	gen := s.summaries.generation()
	snap := &librarySnapshot{gen: gen, dir: s.libraryDir(), listedAt: time.Now()}
	ws, parsed, err := s.listLibrary(ctx, ListOptions{})
	if err != nil {
		s.search.invalid.Store(true)
		return nil, err
	}
	if s.summaries.generation() == gen+parsed {
		// Every file parsed meanwhile was parsed by this listing, so
		// the index has it. Otherwise another listing parsed a file
		// this one may have read before it changed: the old generation
		// makes the next query list again.
		snap.gen = gen + parsed
	}
	snap.workflows = ws
	if old != nil && sameListing(old.workflows, ws) {
		snap.index = old.index
	} else {
		docs := make([]search.Document, len(ws))
		for i, w := range ws {
			docs[i] = search.Document{Kind: KindWorkflow, Name: w.Name, Title: w.Title, Description: w.Description, Tags: w.Tags}
		}
		snap.index = search.New(docs)
	}
	s.search.lib.Store(snap)
	return snap, nil
}

// sameListing reports whether two listings index alike: same files, same
// contents (the version hashes the definition) and validity.
func sameListing(a, b []WorkflowSummary) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name || a[i].Path != b[i].Path || a[i].Version != b[i].Version || a[i].Valid != b[i].Valid {
			return false
		}
	}
	return true
}

func (st *searchState) recheckEvery() time.Duration {
	if st.recheck > 0 {
		return st.recheck
	}
	return defaultRecheck
}

// refreshInBackground starts one listing at a time, for files changed in
// place; queries meanwhile use the current index.
func (s *Service) refreshInBackground() {
	st := &s.search
	st.bgMu.Lock()
	defer st.bgMu.Unlock()
	if st.bgRunning || st.bgClosed {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	st.bgRunning, st.bgCancel = true, cancel
	st.bg.Add(1)
	go func() {
		defer st.bg.Done()
		defer cancel()
		_, _ = s.refreshLibrary(ctx, true) // an error leaves the index invalid: the next query lists
		st.bgMu.Lock()
		st.bgRunning = false
		st.bgMu.Unlock()
	}()
}

// close stops background listings and waits for them.
func (st *searchState) close() {
	st.bgMu.Lock()
	st.bgClosed = true
	if st.bgCancel != nil {
		st.bgCancel()
	}
	st.bgMu.Unlock()
	st.bg.Wait()
}
