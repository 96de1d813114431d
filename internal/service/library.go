package service

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sync"

	"stepwise.dev/stepwise/code"
	"stepwise.dev/stepwise/internal/engine"
	"stepwise.dev/stepwise/internal/library"
	"stepwise.dev/stepwise/internal/workflow"
)

// Error codes of the library.
const (
	CodeVersionConflict = "VERSION_CONFLICT"
	CodeUnsafeName      = "UNSAFE_NAME"
	CodeNotFound        = code.WorkflowNotFound
	CodeNameMismatch    = "NAME_MISMATCH"
	CodeNameMissing     = "NAME_MISSING"
	CategorySecurity    = "security"
)

// fileVersion is the version of a library file: the workflow's version
// (canonical form) when it parses, else the hash of its bytes (a draft
// with a syntax error still has a version to save against).
func fileVersion(data []byte) string {
	if src, _ := workflow.Parse(data); src != nil {
		if v, err := workflow.VersionOf(src.Value); err == nil {
			return v
		}
	}
	h := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(h[:])
}

// SaveRequest is a workflow to write into the library.
type SaveRequest struct {
	Content string
	// Draft saves into drafts/, valid or not.
	Draft bool
	// Name is needed only when the content has no readable name (a draft
	// with a syntax error); when both are given they must agree.
	Name            string
	ExpectedVersion string
	Overwrite       bool
}

// SaveResult is a saved workflow or draft.
type SaveResult struct {
	Name    string `json:"name"`
	Path    string `json:"path"`
	Version string `json:"version"`
	// Revision is the hash of the file's bytes: the expected_version of
	// the next save, rename or delete.
	Revision string `json:"revision"`
	Draft    bool   `json:"draft"`
	Valid    bool   `json:"valid"`
	// Violations of a draft (a library save has none: it is refused).
	Violations []workflow.Violation `json:"violations"`
	// Warnings do not stop a save (rule secret-name: an input or question
	// named like a credential, not marked secret).
	Warnings []workflow.Violation `json:"warnings"`
	// Replaced is the version that was overwritten, if any.
	Replaced string `json:"replaced_version,omitempty"`
	// DraftRemoved: saving to the library promoted the draft of that name.
	DraftRemoved bool `json:"draft_removed,omitempty"`
}

// SaveWorkflow validates and writes a workflow (or a draft). A library
// save of an invalid workflow writes nothing and returns WORKFLOW_INVALID
// with the violations; replacing an existing file needs its current
// revision as ExpectedVersion (or Overwrite), else VERSION_CONFLICT
// carrying the current version and revision.
func (s *Service) SaveWorkflow(ctx context.Context, req SaveRequest) (*SaveResult, error) {
	data := []byte(req.Content)
	res := s.check(data, s.checkDir())
	name := req.Name
	if wf := res.Workflow; wf != nil && wf.Name != "" {
		if req.Name != "" && req.Name != wf.Name {
			return nil, &engine.Error{Code: CodeNameMismatch, Category: engine.CategoryValidation, Workflow: wf.Name,
				Name: req.Name, Argument: "name",
				Message:    fmt.Sprintf("the content is workflow %q, not %q", wf.Name, req.Name),
				Suggestion: "leave out the name, or make it equal to the content's name: field (rename the workflow to change its name)"}
		}
		name = wf.Name
	}
	if name == "" {
		return nil, &engine.Error{Code: CodeNameMissing, Category: engine.CategoryValidation, Violations: res.Violations, Argument: "name",
			Message:    "the workflow has no readable name",
			Suggestion: "add a top-level name: field (or, for a draft that does not parse yet, give its name)"}
	}
	if err := library.CheckName(name); err != nil {
		return nil, s.libraryError(err, name)
	}
	if !req.Draft && !res.Valid() {
		return nil, &engine.Error{Code: engine.CodeWorkflowInvalid, Category: engine.CategoryValidation, Workflow: name,
			Message:    fmt.Sprintf("workflow %q is invalid: nothing was saved", name),
			Violations: res.Violations,
			Suggestion: "fix the violations and save again, or save it as a draft meanwhile"}
	}
	if !req.Draft && res.Workflow != nil {
		if err := s.checkHookNames(res.Workflow); err != nil {
			return nil, err
		}
	}
	ext := ".yaml"
	if res.Source != nil && res.Source.Format == "json" {
		ext = ".json"
	}
	kind := library.Saved
	if req.Draft {
		kind = library.Draft
	}
	var replaced string
	if old, err := s.Library.Get(kind, name); err == nil {
		replaced = old.Version
	}
	f, err := s.Library.Save(kind, name, ext, data, library.WriteOptions{ExpectedVersion: req.ExpectedVersion, Overwrite: req.Overwrite})
	if err != nil {
		return nil, s.libraryError(err, name)
	}
	out := &SaveResult{Name: name, Path: f.Path, Version: f.Version, Revision: f.Revision, Draft: req.Draft, Valid: res.Valid(),
		Violations: res.Violations, Warnings: res.Warnings, Replaced: replaced}
	if out.Violations == nil {
		out.Violations = []workflow.Violation{}
	}
	if out.Warnings == nil {
		out.Warnings = []workflow.Violation{}
	}
	if !req.Draft {
		// Promotion: the draft has become the workflow (kept in previous/).
		if _, err := s.Library.Delete(library.Draft, name, ""); err == nil {
			out.DraftRemoved = true
		} else if !errors.Is(err, library.ErrNotFound) {
			return nil, fmt.Errorf("saved %q, but removing its draft failed: %w", name, err)
		}
	}
	s.libraryChanged(name)
	return out, nil
}

// RenameResult is a renamed workflow.
type RenameResult struct {
	Name    string `json:"name"`
	OldName string `json:"old_name"`
	Path    string `json:"path"`
	Version string `json:"version"`
	// Revision is the renamed file's (its name: line changed).
	Revision string `json:"revision"`
	// ReferencedBy names the saved workflows whose steps call the old
	// name (invalid now), DraftsReferencing the drafts; both sorted, and
	// null only when the library could not be listed after the rename.
	ReferencedBy      []string `json:"referenced_by"`
	DraftsReferencing []string `json:"drafts_referencing"`
}

// RenameWorkflow renames a saved workflow: its file and its name: field
// together (nothing else in the file changes). Runs already started keep
// the version they pinned.
func (s *Service) RenameWorkflow(ctx context.Context, name, newName, expectedVersion string) (*RenameResult, error) {
	f, err := s.Library.Rename(name, newName, expectedVersion, func(content []byte) ([]byte, error) {
		src, vs := workflow.Parse(content)
		if src == nil {
			return nil, &workflow.ValidationError{Violations: vs}
		}
		return src.WithName(newName)
	})
	if err != nil {
		return nil, s.libraryError(err, name)
	}
	s.libraryChanged(name)
	s.libraryChanged(newName)
	out := &RenameResult{Name: newName, OldName: name, Path: f.Path, Version: f.Version, Revision: f.Revision}
	// The rename is done: a listing that fails leaves the callers unknown
	// (null), not the rename failed.
	if out.ReferencedBy, out.DraftsReferencing, err = s.callers(ctx, name); err != nil {
		s.log.Warn("renamed a workflow, but could not list the workflows calling its old name", "old_name", name, "name", newName, "err", err)
	}
	return out, nil
}

// callers lists the saved workflows and the drafts whose steps call the
// workflow name.
func (s *Service) callers(ctx context.Context, name string) (saved, drafts []string, err error) {
	ws, err := s.ListLibrary(ctx, ListOptions{IncludeDrafts: true})
	if err != nil {
		return nil, nil, err
	}
	saved, drafts = []string{}, []string{}
	for _, w := range ws {
		if !slices.Contains(w.calls, name) {
			continue
		}
		if w.Draft {
			drafts = append(drafts, w.Name)
		} else {
			saved = append(saved, w.Name)
		}
	}
	return saved, drafts, nil
}

// DeleteResult is a deleted workflow or draft.
type DeleteResult struct {
	Name     string `json:"name"`
	Draft    bool   `json:"draft"`
	Version  string `json:"version"`
	Revision string `json:"revision"`
	// KeptIn is the directory holding the removed content.
	KeptIn string `json:"kept_in"`
}

// DeleteWorkflow removes a saved workflow or a draft (at revision
// expectedVersion when given). The content is kept in the home's previous/ directory.
func (s *Service) DeleteWorkflow(ctx context.Context, name string, draft bool, expectedVersion string) (*DeleteResult, error) {
	kind := library.Saved
	if draft {
		kind = library.Draft
	}
	f, err := s.Library.Delete(kind, name, expectedVersion)
	if err != nil {
		return nil, s.libraryError(err, name)
	}
	s.libraryChanged(name)
	return &DeleteResult{Name: name, Draft: draft, Version: f.Version, Revision: f.Revision, KeptIn: s.Library.KeptIn()}, nil
}

// CheckWorkflowName returns the structured error of an unsafe name, nil
// for a safe one.
func (s *Service) CheckWorkflowName(name string) error {
	if err := library.CheckName(name); err != nil {
		return s.libraryError(err, name)
	}
	return nil
}

// libraryError maps the library's errors to structured ones.
func (s *Service) libraryError(err error, name string) error {
	var ce *library.ConflictError
	var ve *workflow.ValidationError
	switch {
	case errors.As(err, &ce):
		e := &engine.Error{Code: CodeVersionConflict, Category: engine.CategoryConflict, Workflow: ce.Name,
			CurrentVersion: ce.Current, CurrentRevision: ce.CurrentRevision, Message: ce.Error(), Err: err}
		switch {
		case ce.Current == "":
			e.Suggestion = "it was removed meanwhile: save it without an expected version to create it again"
		case ce.Expected == "":
			e.Suggestion = "read it, then save with its current revision as the expected version, or overwrite it"
		case ce.Expected == ce.Current:
			e.Suggestion = "the expected version takes the revision (the hash of the file's bytes) that reading or saving a workflow returns; if you made your change to the content as it is now, save with the expected version " + ce.CurrentRevision
		default:
			e.Suggestion = "someone changed it: read the current content, merge your change and save with the expected version " + ce.CurrentRevision
		}
		return e
	case library.IsUnsafe(err):
		return &engine.Error{Code: CodeUnsafeName, Category: CategorySecurity, Name: name, Message: err.Error(), Err: err,
			Suggestion: "use a library name (lowercase letters, digits, - and _; no paths) as the library lists them"}
	case errors.Is(err, library.ErrNotFound):
		return s.workflowNotFound(name, err.Error(), err)
	case errors.As(err, &ve):
		return &engine.Error{Code: engine.CodeWorkflowInvalid, Category: engine.CategoryValidation, Workflow: name,
			Message: "the workflow does not parse", Violations: ve.Violations, Err: err,
			Suggestion: "fix the listed violations and try again"}
	}
	return err
}

// libraryWatchers are told when a library entry changes through the
// service (a surface updates resources and tools).
type libraryWatchers struct {
	mu  sync.Mutex
	fns []func(name string)
}

// OnLibraryChange registers fn, called with the name of every workflow or
// draft saved, renamed (old and new name) or deleted through the service
// — or, on a database replicas share, through any of them ("" when some
// changes may have been missed: anything may have changed; catalogs
// changed through another replica are told this way too).
func (s *Service) OnLibraryChange(fn func(name string)) {
	s.watchers.mu.Lock()
	s.watchers.fns = append(s.watchers.fns, fn)
	s.watchers.mu.Unlock()
	s.listen() // changes through other replicas too
}

// libraryChanged tells this process's watchers and the other replicas'
// that name changed.
func (s *Service) libraryChanged(name string) {
	s.notifyLibrary(name)
	s.publish(topicLibrary, name)
}

// notifyLibrary tells this process's watchers that name changed ("":
// anything may have).
func (s *Service) notifyLibrary(name string) {
	s.InvalidateSearch()
	s.hooks.invalidate()
	s.watchers.mu.Lock()
	fns := append([]func(string){}, s.watchers.fns...)
	s.watchers.mu.Unlock()
	for _, fn := range fns {
		fn(name)
	}
}
