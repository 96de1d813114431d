package service

import (
	"context"
	"errors"
	"time"

	"stepwise.dev/stepwise/internal/action"
	"stepwise.dev/stepwise/internal/catalog"
	"stepwise.dev/stepwise/internal/engine"
	"stepwise.dev/stepwise/internal/library"
	"stepwise.dev/stepwise/internal/workflow"
)

// Error codes of catalogs.
const (
	CodeCatalogInvalid       = "CATALOG_INVALID"
	CodeCatalogConflict      = "CATALOG_CONFLICT"
	CodeCatalogNotFound      = "CATALOG_NOT_FOUND"
	CodeCatalogURLNotAllowed = "CATALOG_URL_NOT_ALLOWED"
)

// CatalogInfo is a catalog as lists show it. Credentials appear as the
// $NAME references they are stored as.
type CatalogInfo struct {
	Name       string   `json:"name"`
	Title      string   `json:"title"`
	BaseURL    string   `json:"base_url"`
	Enabled    bool     `json:"enabled"`
	OpenAPI    string   `json:"openapi"`
	Source     string   `json:"source,omitempty"`
	Operations int      `json:"operations"`
	Actions    []string `json:"actions"`
	// ActionsTotal counts the actions when Actions holds only the first
	// of them (Brief).
	ActionsTotal    int                           `json:"actions_total,omitempty"`
	Auth            map[string]catalog.Credential `json:"auth,omitempty"`
	SecuritySchemes map[string]catalog.Scheme     `json:"security_schemes,omitempty"`
	Path            string                        `json:"path"`
	ImportedAt      time.Time                     `json:"imported_at"`
}

func (s *Service) infoOf(c *catalog.Catalog) CatalogInfo {
	return CatalogInfo{Name: c.Name, Title: c.Title, BaseURL: c.BaseURL, Enabled: c.Enabled, OpenAPI: c.Source.OpenAPI,
		Source: c.Source.Location, Operations: len(c.Operations), Actions: c.ActionNames(), Auth: c.Auth,
		SecuritySchemes: c.Schemes, Path: s.catalogs.store.Where(c.Name), ImportedAt: c.ImportedAt}
}

// Brief is the catalog with at most n of its action names, the others
// counted in ActionsTotal: what a list shows of a catalog of thousands of
// operations.
func (c CatalogInfo) Brief(n int) CatalogInfo {
	if len(c.Actions) > n {
		c.ActionsTotal = len(c.Actions)
		c.Actions = c.Actions[:n:n]
	}
	return c
}

// CatalogImportRequest is a document to import as a catalog.
type CatalogImportRequest struct {
	// Source is a file path, a URL (when the service allows them) or the
	// document itself.
	Source string
	Title  string
	// Name defaults to one made from Title.
	Name      string
	BaseURL   string
	Overwrite bool
	Enabled   bool
	Auth      map[string]catalog.Credential
}

// CatalogImportResult is an imported catalog.
type CatalogImportResult struct {
	CatalogInfo
	// Replaced: a catalog of that name was overwritten.
	Replaced bool     `json:"replaced,omitempty"`
	Warnings []string `json:"warnings"`
}

// ValidateCatalog parses a document and reports its problems (which
// prevent an import) and warnings.
func (s *Service) ValidateCatalog(ctx context.Context, source string) (*catalog.Report, error) {
	data, loc, err := catalog.Read(ctx, source, s.catalogs.allowURLs, s.catalogs.fetch)
	if err != nil {
		return nil, catalogError(err, "")
	}
	return catalog.Validate(ctx, data, loc), nil
}

// PreviewCatalog is a dry run of ImportCatalog: the actions it would
// make, grouped by tag, and its warnings. Nothing is written.
func (s *Service) PreviewCatalog(ctx context.Context, req CatalogImportRequest, page catalog.Page) (*catalog.Preview, error) {
	c, warnings, err := s.buildCatalog(ctx, req, true)
	if err != nil {
		return nil, catalogError(err, req.Name)
	}
	return c.Preview(warnings, page), nil
}

// ImportCatalog imports a document as a catalog, atomically: an existing
// catalog of the name is replaced only with Overwrite (else
// CATALOG_CONFLICT). An enabled catalog's operations become actions at
// once.
func (s *Service) ImportCatalog(ctx context.Context, req CatalogImportRequest) (*CatalogImportResult, error) {
	c, warnings, err := s.buildCatalog(ctx, req, false)
	if err != nil {
		return nil, catalogError(err, req.Name)
	}
	s.catalogs.mu.Lock()
	defer s.catalogs.mu.Unlock()
	old, err := s.catalogs.store.Put(c, req.Overwrite)
	if err != nil {
		return nil, catalogError(err, c.Name)
	}
	s.applyCatalog(c)
	s.publish(topicCatalog, c.Name)
	if warnings == nil {
		warnings = []string{}
	}
	return &CatalogImportResult{CatalogInfo: s.infoOf(c), Replaced: old != nil, Warnings: warnings}, nil
}

func (s *Service) buildCatalog(ctx context.Context, req CatalogImportRequest, dryRun bool) (*catalog.Catalog, []string, error) {
	if req.Name != "" {
		// An unsafe name is refused before anything is read.
		if err := catalog.CheckName(req.Name); err != nil {
			return nil, nil, err
		}
	}
	if err := s.checkCredentials(req.Auth); err != nil {
		return nil, nil, err
	}
	data, loc, err := catalog.Read(ctx, req.Source, s.catalogs.allowURLs, s.catalogs.fetch)
	if err != nil {
		return nil, nil, err
	}
	return catalog.Build(ctx, data, catalog.Options{Name: req.Name, Title: req.Title, BaseURL: req.BaseURL,
		Enabled: req.Enabled, Auth: req.Auth, Location: loc, DryRun: dryRun})
}

// ListCatalogs lists the catalogs. A catalog file that cannot be read is
// logged and left out.
func (s *Service) ListCatalogs(ctx context.Context) ([]CatalogInfo, error) {
	cs, err := s.catalogs.store.List()
	if err != nil {
		s.log.Warn("catalogs", "error", err)
	}
	out := make([]CatalogInfo, 0, len(cs))
	for _, c := range cs {
		out = append(out, s.infoOf(c))
	}
	return out, nil
}

// GetCatalog returns one catalog.
func (s *Service) GetCatalog(ctx context.Context, name string) (*CatalogInfo, error) {
	c, err := s.catalogs.store.Get(name)
	if err != nil {
		return nil, catalogError(err, name)
	}
	info := s.infoOf(c)
	return &info, nil
}

// SetCatalogEnabled enables a catalog (its operations become actions) or
// disables it (they leave the registry: workflows using them no longer
// validate).
func (s *Service) SetCatalogEnabled(ctx context.Context, name string, enabled bool) (*CatalogInfo, error) {
	s.catalogs.mu.Lock()
	defer s.catalogs.mu.Unlock()
	c, err := s.catalogs.store.Update(name, func(c *catalog.Catalog) error {
		c.Enabled = enabled
		return nil
	})
	if err != nil {
		return nil, catalogError(err, name)
	}
	s.applyCatalog(c)
	s.publish(topicCatalog, name)
	info := s.infoOf(c)
	return &info, nil
}

// RemoveCatalog deletes a catalog and unregisters its actions.
func (s *Service) RemoveCatalog(ctx context.Context, name string) (*CatalogInfo, error) {
	s.catalogs.mu.Lock()
	defer s.catalogs.mu.Unlock()
	c, err := s.catalogs.store.Remove(name)
	if err != nil {
		return nil, catalogError(err, name)
	}
	s.dropCatalog(name)
	s.publish(topicCatalog, name)
	info := s.infoOf(c)
	info.Enabled = false
	return &info, nil
}

// catalogError maps the catalog package's errors to structured ones.
func catalogError(err error, name string) error {
	var ie *catalog.InvalidError
	switch {
	case library.IsUnsafe(err):
		return &engine.Error{Code: CodeUnsafeName, Category: CategorySecurity, Name: name, Message: err.Error(), Err: err,
			Suggestion: "use a catalog name of lowercase letters, digits, - and _, starting with a letter (no paths)"}
	case errors.Is(err, catalog.ErrExists):
		return &engine.Error{Code: CodeCatalogConflict, Category: engine.CategoryConflict, Name: name, Message: err.Error(), Err: err,
			Suggestion: "import it again with overwrite to replace it (its actions change at once), or give another name"}
	case errors.Is(err, catalog.ErrNotFound):
		return &engine.Error{Code: CodeCatalogNotFound, Category: engine.CategoryNotFound, Name: name, Message: err.Error(), Err: err,
			Suggestion: "list the catalogs and use a name from the list"}
	case errors.Is(err, catalog.ErrSecretInClear):
		return &engine.Error{Code: engine.CodeSecretInClear, Category: CategorySecurity, Name: name, Argument: "auth", Message: err.Error(), Err: err,
			Suggestion: "put the secret in an environment variable of the server and give its name as $NAME"}
	case errors.Is(err, action.ErrNetworkNotAllowed):
		return &engine.Error{Code: action.CodeNetworkNotAllowed, Category: CategorySecurity, Name: name, Argument: "source", Message: err.Error(), Err: err,
			Suggestion: "give a URL of a public address, a local file path or the document itself, or ask the operator to serve with --allow-network naming that host (or --allow-private-network)"}
	case errors.Is(err, catalog.ErrURLNotAllowed):
		return &engine.Error{Code: CodeCatalogURLNotAllowed, Category: CategorySecurity, Name: name, Argument: "source", Message: err.Error(), Err: err,
			Suggestion: "give a local file path or the document itself, or ask the operator to serve with --allow-catalog-urls"}
	case errors.As(err, &ie):
		vs := make([]workflow.Violation, len(ie.Problems))
		for i, p := range ie.Problems {
			vs[i] = workflow.Violation{Rule: "catalog", Message: p}
		}
		msg := "the document cannot be imported as a catalog"
		if name != "" {
			msg = "catalog " + name + " cannot be imported"
		}
		return &engine.Error{Code: CodeCatalogInvalid, Category: engine.CategoryValidation, Name: name, Argument: "source", Message: msg, Violations: vs, Err: err,
			Suggestion: "fix what the violations say and import again"}
	}
	return err
}
