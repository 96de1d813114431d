package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"stepwise.dev/stepwise/internal/cache"
	"stepwise.dev/stepwise/internal/engine"
	"stepwise.dev/stepwise/internal/home"
	"stepwise.dev/stepwise/internal/library"
	"stepwise.dev/stepwise/internal/store"
	"stepwise.dev/stepwise/internal/workflow"
)

// WorkflowSummary is a library workflow as lists show it.
type WorkflowSummary struct {
	Name        string   `json:"name"`
	Title       string   `json:"title,omitempty"`
	Description string   `json:"description,omitempty"`
	Tags        []string `json:"tags,omitempty"`
	Version     string   `json:"version"`
	// Revision is the hash of the file's bytes: what a save, rename or
	// delete gives as expected_version.
	Revision string         `json:"revision"`
	Valid    bool           `json:"valid"`
	Inputs   []InputSummary `json:"inputs,omitempty"`
	// Path is the file it lives in.
	Path string `json:"path"`
	// Draft is set for drafts (which may be invalid).
	Draft bool `json:"draft,omitempty"`

	// calls are the sub-workflow names it calls (sorted).
	calls []string
}

// InputSummary is one declared input.
type InputSummary struct {
	Name        string `json:"name"`
	Type        string `json:"type"`
	Required    bool   `json:"required"`
	Secret      bool   `json:"secret,omitempty"`
	Description string `json:"description,omitempty"`
	Default     any    `json:"default,omitempty"`
	Enum        []any  `json:"enum,omitempty"`
	// Env is the environment variable that answers it automatically.
	Env string `json:"env,omitempty"`
}

// WorkflowDetail is one workflow with everything an author needs.
type WorkflowDetail struct {
	WorkflowSummary
	// Content is the file as written.
	Content string `json:"content"`
	// Definition is the parsed document (canonical form).
	Definition any                  `json:"definition,omitempty"`
	Outputs    map[string]any       `json:"outputs,omitempty"`
	Steps      []StepOutline        `json:"steps,omitempty"`
	References []workflow.Reference `json:"references,omitempty"`
	Violations []workflow.Violation `json:"violations,omitempty"`
	// Warnings do not make it invalid (rule secret-name).
	Warnings []workflow.Violation `json:"warnings,omitempty"`
	Stats    RunStats             `json:"stats"`
}

// StepOutline is a step's id, kind and title.
type StepOutline struct {
	ID    string `json:"id"`
	Kind  string `json:"kind"`
	Title string `json:"title,omitempty"`
	// Uses names the action or sub-workflow.
	Uses string `json:"uses,omitempty"`
}

// RunStats summarize a workflow's runs.
type RunStats struct {
	Runs      int `json:"runs"`
	Succeeded int `json:"succeeded"`
	Failed    int `json:"failed"`
	Canceled  int `json:"canceled"`
	Active    int `json:"active"`
	// SuccessRate is succeeded / finished runs (absent when none finished).
	SuccessRate    *float64   `json:"success_rate,omitempty"`
	MeanDurationMS int64      `json:"mean_duration_ms,omitempty"`
	LastRunAt      *time.Time `json:"last_run_at,omitempty"`
}

// Validation is the outcome of validating a workflow.
type Validation struct {
	Valid      bool                 `json:"valid"`
	Name       string               `json:"name,omitempty"`
	Version    string               `json:"version,omitempty"`
	Violations []workflow.Violation `json:"violations"`
	// Warnings do not make the workflow invalid (rule secret-name: an
	// input or question named like a credential, not marked secret).
	Warnings []workflow.Violation `json:"warnings"`
}

// summaryCache remembers parsed library files by path, size and
// modification time, so listing a library re-validates only what changed.
// A file's validity depends on more than the file: on the sub-workflows it
// calls being there, and on the actions registered. An entry records
// both — each called name with whether it was found, and the registry's
// generation — and is used only while they still hold, whatever process
// added, renamed or removed the files meanwhile.
type summaryCache struct {
	mu      sync.Mutex
	entries *cache.LRU[string, cachedSummary] // the maxSummaries files read last
	// gen counts the files (re-)parsed: when it moves, some listing saw
	// a library file change, and the search index rebuilds.
	gen uint64
}

// generation returns the count of files (re-)parsed so far.
func (c *summaryCache) generation() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen
}

// maxSummaries bounds the summaries kept: a library file that fell out
// (or one of a library bigger than this) is parsed again when listed.
var maxSummaries = 10000 // a variable for tests

type cachedSummary struct {
	size    int64
	modTime time.Time
	// stamp is a database entry's revision (files: "").
	stamp   string
	summary WorkflowSummary
	// calls maps each sub-workflow name the check looked up to whether
	// it was found; actions is the registry's generation it checked with.
	calls   map[string]bool
	actions uint64
}

// listedNames is what one listing read of the library's directories:
// by directory, each valid name with whether its file is a plain regular
// file (found without resolving anything).
type listedNames map[string]map[string]bool

func (n listedNames) add(dir string, entries []library.Entry) {
	names := make(map[string]bool, len(entries))
	for _, e := range entries {
		names[e.Name] = e.Path != ""
	}
	n[filepath.Clean(dir)] = names
}

// found reports whether a `workflow:` step naming name in a file of dir
// finds its workflow now, as findSubWorkflow would: from the listed names
// when they tell, else by looking.
func (s *Service) found(names listedNames, name, dir string) bool {
	if !home.ValidName(name) {
		return false
	}
	for _, d := range []string{s.Library.Dir(library.Saved), dir} {
		listed, ok := names[filepath.Clean(d)]
		if !ok {
			break
		}
		plain, there := listed[name]
		if there && plain {
			return true
		}
		if there { // a symlink, say: resolve it
			break
		}
		if d == dir { // in neither directory
			return false
		}
	}
	_, err := s.findSubWorkflow(dir, name)
	return err == nil
}

// ListWorkflows lists the library's workflows sorted by name. A pattern
// with a glob character (*?[) matches names; otherwise it is a
// case-insensitive substring of the name, title or description.
func (s *Service) ListWorkflows(ctx context.Context, pattern string) ([]WorkflowSummary, error) {
	return s.ListLibrary(ctx, ListOptions{Pattern: pattern})
}

// ListOptions select library entries.
type ListOptions struct {
	// Pattern: a glob on names, or a substring of name, title or description.
	Pattern string
	// Tag keeps workflows carrying this tag (case-insensitive).
	Tag string
	// IncludeDrafts lists drafts too, after the saved workflows.
	IncludeDrafts bool
}

// ListLibrary lists saved workflows (and drafts) sorted by name.
func (s *Service) ListLibrary(ctx context.Context, o ListOptions) ([]WorkflowSummary, error) {
	if o.Pattern != "" {
		if _, err := path.Match(o.Pattern, ""); err != nil {
			return nil, &engine.Error{Code: CodePatternInvalid, Category: engine.CategoryValidation, Argument: "pattern", Message: fmt.Sprintf("pattern %q: %v", o.Pattern, err),
				Suggestion: "use a glob such as deploy-* or a plain word"}
		}
	}
	out, _, err := s.listLibrary(ctx, o)
	return out, err
}

// listLibrary is ListLibrary, also counting the files it (re-)parsed.
func (s *Service) listLibrary(ctx context.Context, o ListOptions) ([]WorkflowSummary, uint64, error) {
	kinds := []library.Kind{library.Saved}
	if o.IncludeDrafts {
		kinds = append(kinds, library.Draft)
	}
	out := []WorkflowSummary{}
	var parsed uint64
	byKind := make(map[library.Kind][]library.Entry, len(kinds))
	names := listedNames{}
	for _, kind := range kinds {
		entries, err := s.Library.Entries(kind)
		if err != nil {
			return nil, 0, err
		}
		byKind[kind] = entries
		names.add(s.Library.Dir(kind), entries)
	}
	for _, kind := range kinds {
		for _, e := range byKind[kind] {
			if err := ctx.Err(); err != nil {
				return nil, 0, err
			}
			if e.Path == "" {
				loc, err := s.lookupEntry(kind, e.Name)
				if err != nil || loc.path == "" {
					continue // an unsafe symlink or a file that vanished: not listed
				}
				e.Path = loc.path
			}
			sum, fresh, err := s.summarize(kind, e, names)
			if err != nil {
				continue
			}
			if fresh {
				parsed++
			}
			sum.Draft = kind == library.Draft
			if matches(o.Pattern, sum) && hasTag(o.Tag, sum.Tags) {
				out = append(out, sum)
			}
		}
	}
	return out, parsed, nil
}

func hasTag(tag string, tags []string) bool {
	if tag == "" {
		return true
	}
	for _, t := range tags {
		if strings.EqualFold(t, tag) {
			return true
		}
	}
	return false
}

func matches(pattern string, w WorkflowSummary) bool {
	if pattern == "" {
		return true
	}
	if strings.ContainsAny(pattern, "*?[") {
		ok, _ := path.Match(pattern, w.Name)
		return ok
	}
	p := strings.ToLower(pattern)
	return strings.Contains(strings.ToLower(w.Name), p) || strings.Contains(strings.ToLower(w.Title), p) ||
		strings.Contains(strings.ToLower(w.Description), p)
}

// summarize returns a library entry's summary from the cache, or parses
// it (parsed is then true) when it is new, its size or time changed (its
// stamp, in the database), or what its validity depends on changed
// (names: what the listing found). e.Path is set.
func (s *Service) summarize(kind library.Kind, e library.Entry, names listedNames) (sum WorkflowSummary, parsed bool, err error) {
	p, name := e.Path, e.Name
	var size int64
	var modTime time.Time
	dir := ""
	if e.Stamp == "" { // a file
		info, err := os.Stat(p)
		if err != nil {
			return WorkflowSummary{}, false, err
		}
		size, modTime, dir = info.Size(), info.ModTime(), filepath.Dir(p)
	}
	s.summaries.mu.Lock()
	if s.summaries.entries == nil {
		s.summaries.entries = cache.New[string, cachedSummary](maxSummaries)
	}
	c, ok := s.summaries.entries.Get(p)
	s.summaries.mu.Unlock()
	if ok && c.size == size && c.modTime.Equal(modTime) && c.stamp == e.Stamp && s.stillHolds(c, names, dir) {
		return c.summary, false, nil
	}
	var data []byte
	stamp := e.Stamp
	if stamp == "" {
		data, err = os.ReadFile(p)
	} else {
		var f *library.File
		if f, err = s.Library.Get(kind, name); err == nil {
			data, stamp = f.Content, f.Revision
		}
	}
	if err != nil {
		return WorkflowSummary{}, false, err
	}
	actions := s.Actions.Generation()
	calls := map[string]bool{}
	res := workflow.Check(data, workflow.Options{Resolver: resolver{actions: s.Actions, svc: s, dir: dir, calls: calls}})
	sum = summaryOf(res, name, p, data)
	sum.calls = slices.Sorted(maps.Keys(calls))
	s.summaries.mu.Lock()
	s.summaries.entries.Add(p, cachedSummary{size: size, modTime: modTime, stamp: stamp, summary: sum, calls: calls, actions: actions})
	s.summaries.gen++
	s.summaries.mu.Unlock()
	return sum, true, nil
}

// stillHolds reports whether what a cached check depended on besides its
// file is as it was: the registry and each called name's presence.
func (s *Service) stillHolds(c cachedSummary, names listedNames, dir string) bool {
	if c.actions != s.Actions.Generation() {
		return false
	}
	for name, was := range c.calls {
		if s.found(names, name, dir) != was {
			return false
		}
	}
	return true
}

func (s *Service) check(data []byte, dir string) *workflow.Result {
	return workflow.Check(data, workflow.Options{Resolver: resolver{actions: s.Actions, svc: s, dir: dir}})
}

func summaryOf(res *workflow.Result, name, p string, data []byte) WorkflowSummary {
	sum := WorkflowSummary{Name: name, Version: res.Version, Revision: library.Revision(data), Valid: res.Valid(), Path: p}
	if wf := res.Workflow; wf != nil {
		sum.Title, sum.Description, sum.Tags = wf.Title, wf.Description, wf.Tags
		sum.Inputs = InputsOf(wf)
	}
	return sum
}

// InputsOf summarizes a workflow's declared inputs in written order.
func InputsOf(wf *workflow.Workflow) []InputSummary {
	var out []InputSummary
	for _, name := range wf.InputNames() {
		in := wf.Inputs[name]
		if in == nil {
			continue
		}
		is := InputSummary{Name: name, Type: in.Type, Required: in.IsRequired(), Secret: in.Secret, Description: in.Description,
			Enum: in.Enum, Env: in.Env}
		if !in.Secret {
			is.Default = in.Default
		}
		out = append(out, is)
	}
	return out
}

// GetWorkflow returns a library workflow with its content, definition,
// references, violations (a library file may have become invalid) and run
// statistics.
func (s *Service) GetWorkflow(ctx context.Context, name string) (*WorkflowDetail, error) {
	return s.GetLibraryEntry(ctx, name, false)
}

// GetLibraryEntry is GetWorkflow for a saved workflow or a draft.
func (s *Service) GetLibraryEntry(ctx context.Context, name string, draft bool) (*WorkflowDetail, error) {
	kind := library.Saved
	if draft {
		kind = library.Draft
	}
	loc, err := s.lookupEntry(kind, name)
	if err == nil && loc.path == "" {
		err = fmt.Errorf("%w: no %s %q", library.ErrNotFound, kind, name)
	}
	if err != nil {
		return nil, s.libraryError(err, name)
	}
	data, err := loc.read()
	if err != nil {
		return nil, fmt.Errorf("read workflow %q: %w", name, err)
	}
	res := s.check(data, checkDirOf(loc))
	d := &WorkflowDetail{WorkflowSummary: summaryOf(res, name, loc.path, data), Content: string(data), Violations: res.Violations, Warnings: res.Warnings}
	d.Draft = draft
	if res.Source != nil {
		if canon, err := workflow.Canonical(res.Source.Value); err == nil {
			_ = json.Unmarshal(canon, &d.Definition)
		}
		d.References = workflow.References(res.Source.Value)
	}
	if wf := res.Workflow; wf != nil {
		d.Outputs = wf.Outputs
		for _, st := range wf.Steps {
			o := StepOutline{ID: st.ID, Kind: st.Kind(), Title: st.Title}
			if st.Uses != "" {
				o.Uses = st.Uses
			} else if st.Workflow != "" {
				o.Uses = st.Workflow
			}
			d.Steps = append(d.Steps, o)
		}
	}
	st, err := s.Store.WorkflowStats(ctx, workflowName(res, name))
	if err != nil {
		return nil, err
	}
	d.Stats = statsOf(st)
	return d, nil
}

// workflowName is the name runs record: the one declared in the file.
func workflowName(res *workflow.Result, fallback string) string {
	if res.Workflow != nil && res.Workflow.Name != "" {
		return res.Workflow.Name
	}
	return fallback
}

// findLibrary resolves a library name only (no file paths: surfaces that
// reach a server must not name arbitrary files).
func (s *Service) findLibrary(name string) (located, error) {
	if !home.ValidName(name) {
		return located{}, &engine.Error{Code: CodeUnsafeName, Category: CategorySecurity, Name: name,
			Message:    fmt.Sprintf("%q is not a workflow name: names match ^[a-z0-9][a-z0-9_-]{0,63}$ (no paths)", name),
			Suggestion: "list the library and use a name from it"}
	}
	loc, err := s.lookupLibrary(name)
	if err != nil {
		if errors.Is(err, home.ErrUnsafeName) {
			return located{}, &engine.Error{Code: CodeUnsafeName, Category: CategorySecurity, Name: name, Message: err.Error(), Err: err,
				Suggestion: "list the library and use a name from it"}
		}
		if !s.filesLibrary() && !errors.Is(err, home.ErrNotFound) {
			return located{}, err // the database did not answer
		}
		return located{}, s.workflowNotFound(name, "", err)
	}
	return loc, nil
}

// checkDirOf is the directory a library entry is checked in: its file's
// (as found), none for a database entry.
func checkDirOf(loc located) string {
	if loc.inDB {
		return ""
	}
	return filepath.Dir(loc.path)
}

// LoadLibraryWorkflow loads and validates a saved workflow of the library
// by name (never a path, never a draft: what --expose-workflows offers).
func (s *Service) LoadLibraryWorkflow(name string) (*Loaded, error) {
	p, err := s.findLibrary(name)
	if err != nil {
		return nil, err
	}
	return s.loadFile(p)
}

// LoadRunnable loads a workflow to run by name (never a path): the saved
// workflow, or else the draft of that name (Loaded.Draft), so that a
// draft can be tried before it is saved.
func (s *Service) LoadRunnable(name string) (*Loaded, error) {
	p, draft, err := s.findRunnable(name)
	if err != nil {
		return nil, err
	}
	l, err := s.loadFile(p)
	if err != nil {
		return nil, err
	}
	l.Draft = draft
	return l, nil
}

// RunnableSource returns the text of the workflow a name runs (the saved
// workflow, else the draft of that name, as LoadRunnable finds it) and
// where it is, unchecked: for views that show it as written (a chart).
func (s *Service) RunnableSource(name string) ([]byte, string, error) {
	loc, _, err := s.findRunnable(name)
	if err != nil {
		return nil, "", err
	}
	data, err := loc.read()
	if err != nil {
		return nil, "", fmt.Errorf("read workflow %s: %w", loc.path, err)
	}
	return data, loc.path, nil
}

// findRunnable is findLibrary falling back to the drafts: draft reports
// that the file is a draft.
func (s *Service) findRunnable(name string) (p located, draft bool, err error) {
	p, err = s.findLibrary(name)
	var ee *engine.Error
	if errors.As(err, &ee) && ee.Code == CodeNotFound {
		p, err = s.findDraft(name, err)
		return p, err == nil, err
	}
	return p, false, err
}

func statsOf(st store.WorkflowStats) RunStats {
	rs := RunStats{Runs: st.Runs, Succeeded: st.Succeeded, Failed: st.Failed, Canceled: st.Canceled, Active: st.Active,
		MeanDurationMS: st.MeanDuration.Milliseconds()}
	if done := st.Succeeded + st.Failed + st.Canceled; done > 0 {
		r := float64(st.Succeeded) / float64(done)
		rs.SuccessRate = &r
	}
	if !st.LastRunAt.IsZero() {
		t := st.LastRunAt
		rs.LastRunAt = &t
	}
	return rs
}

// ValidateContent validates a workflow given as text (YAML or JSON).
func (s *Service) ValidateContent(data []byte) Validation {
	return validationOf(s.check(data, ""))
}

// ValidateLibrary validates a library workflow by name.
func (s *Service) ValidateLibrary(name string) (Validation, error) {
	loc, err := s.findLibrary(name)
	if err != nil {
		return Validation{}, err
	}
	data, err := loc.read()
	if err != nil {
		return Validation{}, fmt.Errorf("read workflow %q: %w", name, err)
	}
	return validationOf(s.check(data, checkDirOf(loc))), nil
}

func validationOf(res *workflow.Result) Validation {
	v := Validation{Valid: res.Valid(), Version: res.Version, Violations: res.Violations, Warnings: res.Warnings}
	if v.Violations == nil {
		v.Violations = []workflow.Violation{}
	}
	if v.Warnings == nil {
		v.Warnings = []workflow.Violation{}
	}
	if res.Workflow != nil {
		v.Name = res.Workflow.Name
	}
	return v
}

// VersionInfo is a version a workflow's runs were started with.
type VersionInfo struct {
	Version string `json:"version"`
	// RecordedAt is when its first run recorded it.
	RecordedAt time.Time `json:"recorded_at"`
}

// WorkflowVersions lists the versions recorded under a workflow's name,
// newest first, up to limit (at most 1000).
func (s *Service) WorkflowVersions(ctx context.Context, name string, limit int) ([]VersionInfo, error) {
	vs, err := s.Store.ListVersions(ctx, name, limit)
	if err != nil {
		return nil, err
	}
	out := make([]VersionInfo, 0, len(vs))
	for _, v := range vs {
		out = append(out, VersionInfo{Version: v.Version, RecordedAt: v.CreatedAt})
	}
	return out, nil
}
