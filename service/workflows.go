package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"stepwise.dev/stepwise/engine"
	"stepwise.dev/stepwise/home"
	"stepwise.dev/stepwise/store"
	"stepwise.dev/stepwise/workflow"
)

// WorkflowSummary is a library workflow as lists show it.
type WorkflowSummary struct {
	Name        string         `json:"name"`
	Title       string         `json:"title,omitempty"`
	Description string         `json:"description,omitempty"`
	Tags        []string       `json:"tags,omitempty"`
	Version     string         `json:"version"`
	Valid       bool           `json:"valid"`
	Inputs      []InputSummary `json:"inputs,omitempty"`
	// Path is the file it lives in.
	Path string `json:"path"`
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
	Stats      RunStats             `json:"stats"`
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
}

// summaryCache remembers parsed library files by path, size and
// modification time, so listing a library re-validates only what changed.
type summaryCache struct {
	mu      sync.Mutex
	entries map[string]cachedSummary
}

type cachedSummary struct {
	size    int64
	modTime time.Time
	summary WorkflowSummary
}

// ListWorkflows lists the library's workflows sorted by name. A pattern
// with a glob character (*?[) matches names; otherwise it is a
// case-insensitive substring of the name, title or description.
func (s *Service) ListWorkflows(ctx context.Context, pattern string) ([]WorkflowSummary, error) {
	if pattern != "" {
		if _, err := path.Match(pattern, ""); err != nil {
			return nil, &engine.Error{Code: "PATTERN_INVALID", Category: engine.CategoryValidation, Message: fmt.Sprintf("pattern %q: %v", pattern, err),
				Suggestion: "use a glob such as deploy-* or a plain word"}
		}
	}
	names, err := s.libraryNames()
	if err != nil {
		return nil, err
	}
	out := []WorkflowSummary{}
	for _, name := range names {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		p, err := s.Home.FindWorkflow(name)
		if err != nil {
			continue // an unsafe symlink or a file that vanished: not listed
		}
		sum, err := s.summarize(p, name)
		if err != nil {
			continue
		}
		if matches(pattern, sum) {
			out = append(out, sum)
		}
	}
	return out, nil
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

// libraryNames lists the valid names of the library's files, once each
// (the first extension in lookup order wins, as FindWorkflow does).
func (s *Service) libraryNames() ([]string, error) {
	entries, err := os.ReadDir(s.Home.WorkflowsDir())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list the workflow library: %w", err)
	}
	seen := map[string]bool{}
	var names []string
	for _, e := range entries {
		ext := filepath.Ext(e.Name())
		if ext != ".yaml" && ext != ".yml" && ext != ".json" {
			continue
		}
		name := strings.TrimSuffix(e.Name(), ext)
		if !home.ValidName(name) || seen[name] {
			continue
		}
		seen[name] = true
		names = append(names, name)
	}
	sort.Strings(names)
	return names, nil
}

func (s *Service) summarize(p, name string) (WorkflowSummary, error) {
	info, err := os.Stat(p)
	if err != nil {
		return WorkflowSummary{}, err
	}
	s.summaries.mu.Lock()
	if s.summaries.entries == nil {
		s.summaries.entries = map[string]cachedSummary{}
	}
	c, ok := s.summaries.entries[p]
	s.summaries.mu.Unlock()
	if ok && c.size == info.Size() && c.modTime.Equal(info.ModTime()) {
		return c.summary, nil
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return WorkflowSummary{}, err
	}
	res := s.check(data, filepath.Dir(p))
	sum := summaryOf(res, name, p)
	s.summaries.mu.Lock()
	s.summaries.entries[p] = cachedSummary{size: info.Size(), modTime: info.ModTime(), summary: sum}
	s.summaries.mu.Unlock()
	return sum, nil
}

func (s *Service) check(data []byte, dir string) *workflow.Result {
	return workflow.Check(data, workflow.Options{Resolver: resolver{actions: s.Actions, home: s.Home, dir: dir}})
}

func summaryOf(res *workflow.Result, name, p string) WorkflowSummary {
	sum := WorkflowSummary{Name: name, Version: res.Version, Valid: res.Valid(), Path: p}
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
	p, err := s.findLibrary(name)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("read workflow %q: %w", name, err)
	}
	res := s.check(data, filepath.Dir(p))
	d := &WorkflowDetail{WorkflowSummary: summaryOf(res, name, p), Content: string(data), Violations: res.Violations}
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
func (s *Service) findLibrary(name string) (string, error) {
	if !home.ValidName(name) {
		return "", &engine.Error{Code: "UNSAFE_NAME", Category: "security",
			Message:    fmt.Sprintf("%q is not a workflow name: names match ^[a-z0-9][a-z0-9_-]{0,63}$ (no paths)", name),
			Suggestion: "list the library with workflow_list and use a name from it"}
	}
	p, err := s.Home.FindWorkflow(name)
	if err != nil {
		if errors.Is(err, home.ErrUnsafeName) {
			return "", &engine.Error{Code: "UNSAFE_NAME", Category: "security", Message: err.Error(), Err: err}
		}
		return "", &engine.Error{Code: "WORKFLOW_NOT_FOUND", Category: engine.CategoryNotFound, Message: fmt.Sprintf("no workflow %q in the library", name), Err: err,
			Suggestion: "list the library with workflow_list"}
	}
	return p, nil
}

// LoadLibraryWorkflow loads and validates a workflow of the library by
// name (never a path).
func (s *Service) LoadLibraryWorkflow(name string) (*Loaded, error) {
	if _, err := s.findLibrary(name); err != nil {
		return nil, err
	}
	return s.LoadWorkflow(name)
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
	p, err := s.findLibrary(name)
	if err != nil {
		return Validation{}, err
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return Validation{}, fmt.Errorf("read workflow %q: %w", name, err)
	}
	return validationOf(s.check(data, filepath.Dir(p))), nil
}

func validationOf(res *workflow.Result) Validation {
	v := Validation{Valid: res.Valid(), Version: res.Version, Violations: res.Violations}
	if v.Violations == nil {
		v.Violations = []workflow.Violation{}
	}
	if res.Workflow != nil {
		v.Name = res.Workflow.Name
	}
	return v
}
