package service

import (
	"context"
	"math"

	"stepwise.dev/stepwise/internal/clip"
	"stepwise.dev/stepwise/internal/search"
)

// Kinds of search results.
const (
	KindAction   = "action"
	KindWorkflow = "workflow"
)

// Search result counts.
const (
	DefaultSearchLimit = 10
	MaxSearchLimit     = 100
)

// SearchResult is an action or a library workflow found by SearchActions.
type SearchResult struct {
	// Kind is "action" (a step's `uses:`) or "workflow" (run it, or call
	// it from a `workflow:` step).
	Kind        string   `json:"kind"`
	Name        string   `json:"name"`
	Title       string   `json:"title,omitempty"`
	Description string   `json:"description,omitempty"`
	Tags        []string `json:"tags,omitempty"`
	// Score is the relevance (higher is better; 0 for an empty query).
	Score float64 `json:"score"`
	// Safety is an action's tier: read-only, mutating or destructive.
	Safety string `json:"safety,omitempty"`
	// Inputs are a workflow's declared inputs.
	Inputs []InputSummary `json:"inputs,omitempty"`
	// Valid is a workflow's validity: an invalid library file is found
	// (to be fixed) but cannot be run.
	Valid *bool `json:"valid,omitempty"`
}

// maxSearchText bounds a result's title and description: a hundred
// results of an API's long descriptions would be a result an agent cannot
// hold (the whole text is action_get's or workflow_get's).
const maxSearchText = 300

// SearchActions ranks the registered actions and, with includeWorkflows,
// the library's workflows by how well their name, title, tags and
// description match query, best first, at most limit of them (default
// DefaultSearchLimit, at most MaxSearchLimit). A query without words lists
// everything in name order.
//
// The library is not read per query: the index is rebuilt only when the
// library has changed (see libraryIndex), so a search costs the same with
// ten or ten thousand files.
func (s *Service) SearchActions(ctx context.Context, query string, includeWorkflows bool, limit int) ([]SearchResult, error) {
	if limit <= 0 {
		limit = DefaultSearchLimit
	}
	limit = min(limit, MaxSearchLimit)
	q := search.Parse(query)
	acts := s.actionIndex()
	lists := [][]search.Hit{acts.index.Search(q, limit)}
	var lib *librarySnapshot
	if includeWorkflows {
		var err error
		if lib, err = s.libraryIndex(ctx); err != nil {
			return nil, err
		}
		lists = append(lists, lib.index.Search(q, limit))
	}
	hits := search.Merge(limit, lists...)
	out := make([]SearchResult, 0, len(hits))
	for _, h := range hits {
		r := SearchResult{Kind: h.Kind, Name: h.Name, Score: math.Round(h.Score*100) / 100}
		switch h.Kind {
		case KindAction:
			a := acts.actions[h.Doc]
			r.Description, r.Safety = clip.Text(a.description, maxSearchText), a.safety
		case KindWorkflow:
			w := lib.workflows[h.Doc]
			valid := w.Valid
			r.Title, r.Description, r.Tags, r.Inputs, r.Valid = clip.Text(w.Title, maxSearchText), clip.Text(w.Description, maxSearchText), w.Tags, w.Inputs, &valid
		}
		out = append(out, r)
	}
	return out, nil
}

// actionDoc is what search shows of an action, copied so that an index
// never changes under a reader.
type actionDoc struct {
	name, description, safety string
}

// actionSnapshot is the index of the registered actions.
type actionSnapshot struct {
	index   *search.Index
	actions []actionDoc
	// gen is the registry's generation it was built at.
	gen uint64
}

// actionIndex returns the index of the registry, rebuilt when an action
// was registered, replaced or removed since (catalogs do that).
func (s *Service) actionIndex() *actionSnapshot {
	// Read first: a registration during the build shows next time.
	gen := s.Actions.Generation()
	if snap := s.search.actions.Load(); snap != nil && snap.gen == gen {
		return snap
	}
	snap := &actionSnapshot{gen: gen}
	names := s.Actions.Names()
	docs := make([]search.Document, 0, len(names))
	for _, n := range names {
		a, ok := s.Actions.Get(n)
		if !ok {
			continue
		}
		d := actionDoc{name: a.Name(), description: a.Description(), safety: a.Safety()}
		snap.actions = append(snap.actions, d)
		docs = append(docs, search.Document{Kind: KindAction, Name: d.name, Description: d.description})
	}
	snap.index = search.New(docs)
	s.search.actions.Store(snap)
	return snap
}
