package mcpserver

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"stepwise.dev/stepwise/internal/catalog"
	"stepwise.dev/stepwise/internal/service"
)

const uriCatalogs = "stepwise://catalogs"

// CatalogValidateIn are catalog_validate's arguments.
type CatalogValidateIn struct {
	Source string `json:"source" jsonschema:"a file path on the server, an http(s) URL if allowed, or the document (JSON or YAML)"`
}

// CatalogValidateOut is catalog_validate's result.
type CatalogValidateOut struct {
	*catalog.Report
}

// Summary implements summarizer.
func (o CatalogValidateOut) Summary() string {
	r := o.Report
	if r == nil {
		return ""
	}
	if !r.Valid {
		return fmt.Sprintf("Cannot be imported: %d problems (%s).", len(r.Problems), strings.Join(r.Problems, "; "))
	}
	return fmt.Sprintf("OpenAPI %s document %q: %d operations, %d warnings. Next: catalog_preview, then catalog_import.", r.OpenAPI, r.Title, r.Operations, len(r.Warnings))
}

// CatalogPreviewIn are catalog_preview's arguments.
type CatalogPreviewIn struct {
	Source  string `json:"source" jsonschema:"the OpenAPI document: a file path on the server, an http(s) URL if allowed, or its text"`
	Title   string `json:"title" jsonschema:"the catalog's title"`
	Name    string `json:"name,omitempty" jsonschema:"its actions' prefix (default: from the title)"`
	BaseURL string `json:"base_url,omitempty" jsonschema:"where calls go (default: the document's first server)"`
	// OperationsCursor and OperationsLimit page the operations.
	OperationsCursor string `json:"operations_cursor,omitempty" jsonschema:"operations_next_cursor of the previous result"`
	OperationsLimit  int    `json:"operations_limit,omitempty" jsonschema:"operations per page (default 20, max 200)"`
}

// CatalogPreviewOut is catalog_preview's result.
type CatalogPreviewOut struct {
	*catalog.Preview
}

// Summary implements summarizer.
func (o CatalogPreviewOut) Summary() string {
	p := o.Preview
	if p == nil {
		return ""
	}
	tags := make([]string, 0, len(p.Tags))
	for t, n := range p.Tags {
		tags = append(tags, fmt.Sprintf("%s (%d)", t, n))
	}
	sort.Strings(tags)
	if len(tags) > 10 {
		tags = append(tags[:10], fmt.Sprintf("%d more tags", len(p.Tags)-10))
	}
	page := ""
	if p.OperationsNextCursor != "" {
		page = fmt.Sprintf(" %d operations shown: the next page with operations_cursor %q.", len(p.Operations), p.OperationsNextCursor)
	}
	return fmt.Sprintf("Catalog %s would make %d actions (%s.*) in %s; %d warnings. Nothing was written.%s",
		p.Name, p.OperationsTotal, p.Name, strings.Join(tags, ", "), len(p.Warnings), page)
}

// CatalogImportIn are catalog_import's arguments.
type CatalogImportIn struct {
	Source    string                        `json:"source" jsonschema:"the OpenAPI document: a file path on the server, an http(s) URL if allowed, or its text"`
	Title     string                        `json:"title" jsonschema:"the catalog's title"`
	Name      string                        `json:"name,omitempty" jsonschema:"its actions' prefix (default: from the title)"`
	BaseURL   string                        `json:"base_url,omitempty" jsonschema:"where calls go (default: the document's first server)"`
	Overwrite bool                          `json:"overwrite,omitempty" jsonschema:"replace a catalog of that name"`
	Enabled   *bool                         `json:"enabled,omitempty" jsonschema:"register its actions now (default true)"`
	Auth      map[string]catalog.Credential `json:"auth,omitempty" jsonschema:"credentials by security scheme (catalog_validate's security_schemes), secrets only as $NAME, a server environment variable"`
}

// CatalogImportOut is catalog_import's result.
type CatalogImportOut struct {
	*service.CatalogImportResult
}

// Summary implements summarizer.
func (o CatalogImportOut) Summary() string {
	r := o.CatalogImportResult
	if r == nil {
		return ""
	}
	state := "enabled: its actions can be used now (action_get describes each)"
	if !r.Enabled {
		state = "disabled: catalog_set_enabled registers its actions"
	}
	return fmt.Sprintf("Imported catalog %s (%d actions, %s.*); %s. %d warnings.", r.Name, r.Operations, r.Name, state, len(r.Warnings))
}

// CatalogListOut is catalog_list's result.
type CatalogListOut struct {
	Catalogs []service.CatalogInfo `json:"catalogs"`
}

// Summary implements summarizer.
func (o CatalogListOut) Summary() string {
	if len(o.Catalogs) == 0 {
		return "No catalogs. Import an OpenAPI document with catalog_import."
	}
	parts := make([]string, len(o.Catalogs))
	for i, c := range o.Catalogs {
		state := "enabled"
		if !c.Enabled {
			state = "disabled"
		}
		parts[i] = fmt.Sprintf("%s (%s, %d actions)", c.Name, state, c.Operations)
	}
	return fmt.Sprintf("%d catalogs: %s.", len(parts), strings.Join(parts, ", "))
}

// CatalogSetEnabledIn are catalog_set_enabled's arguments.
type CatalogSetEnabledIn struct {
	Name    string `json:"name"`
	Enabled bool   `json:"enabled"`
}

// CatalogRemoveIn are catalog_remove's arguments.
type CatalogRemoveIn struct {
	Name    string `json:"name"`
	Confirm bool   `json:"confirm,omitempty" jsonschema:"the person agreed (when your client cannot elicit)"`
}

// CatalogOut is one catalog (catalog_set_enabled, catalog_remove).
type CatalogOut struct {
	*service.CatalogInfo
	// Removed is set by catalog_remove.
	Removed bool `json:"removed,omitempty"`
}

// Summary implements summarizer.
func (o CatalogOut) Summary() string {
	c := o.CatalogInfo
	switch {
	case c == nil:
		return ""
	case o.Removed:
		return fmt.Sprintf("Removed catalog %s: its %d actions are gone.", c.Name, c.Operations)
	case c.Enabled:
		return fmt.Sprintf("Catalog %s is enabled: %d actions %s.*.", c.Name, c.Operations, c.Name)
	}
	return fmt.Sprintf("Catalog %s is disabled: its actions are unregistered.", c.Name)
}

func (s *Server) addCatalogTools() {
	readOnly := &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(false)}
	addTool(s, &mcp.Tool{Name: "catalog_validate", Title: "Check an OpenAPI document", Annotations: readOnly,
		Description: "Check whether an OpenAPI document (Swagger 2.0, OpenAPI 3.0/3.1) can be imported: {valid, openapi, title, base_url, operations, security_schemes, problems, warnings}."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in CatalogValidateIn) (CatalogValidateOut, error) {
			r, err := s.svc.ValidateCatalog(ctx, in.Source)
			return CatalogValidateOut{r}, err
		})
	addTool(s, &mcp.Tool{Name: "catalog_preview", Title: "Preview a catalog import", Annotations: readOnly,
		Description: "Dry run of catalog_import: the actions it would make, counted by tag and safety tier, the first 20 operations and warnings; page with operations_cursor. Writes nothing."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in CatalogPreviewIn) (CatalogPreviewOut, error) {
			page := catalog.Page{Limit: in.OperationsLimit}
			if in.OperationsCursor != "" {
				n, err := strconv.Atoi(in.OperationsCursor)
				if err != nil || n < 0 {
					return CatalogPreviewOut{}, argumentsError("operations_cursor", "operations_cursor is not a cursor of catalog_preview: pass operations_next_cursor of a previous result")
				}
				page.Offset = n
				if page.Limit == 0 {
					page.Limit = catalog.MaxPreviewPage / 2
				}
			}
			if in.OperationsLimit < 0 || in.OperationsLimit > catalog.MaxPreviewPage {
				return CatalogPreviewOut{}, argumentsError("operations_limit", fmt.Sprintf("operations_limit is %d: it is between 1 and %d", in.OperationsLimit, catalog.MaxPreviewPage))
			}
			p, err := s.svc.PreviewCatalog(ctx, service.CatalogImportRequest{Source: in.Source, Title: in.Title, Name: in.Name, BaseURL: in.BaseURL}, page)
			return CatalogPreviewOut{p}, err
		})
	addTool(s, &mcp.Tool{Name: "catalog_import", Title: "Import an OpenAPI catalog",
		Description: "Import an OpenAPI document as a catalog: each operation becomes an action <catalog>.<operationId> (with: path, query and header parameters by name, the body under body). CATALOG_CONFLICT if it exists: pass overwrite.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(false), IdempotentHint: true, OpenWorldHint: ptr(false)}},
		func(ctx context.Context, _ *mcp.CallToolRequest, in CatalogImportIn) (CatalogImportOut, error) {
			enabled := in.Enabled == nil || *in.Enabled
			r, err := s.svc.ImportCatalog(ctx, service.CatalogImportRequest{Source: in.Source, Title: in.Title, Name: in.Name,
				BaseURL: in.BaseURL, Overwrite: in.Overwrite, Enabled: enabled, Auth: in.Auth})
			if err == nil {
				s.catalogsChanged(ctx)
			}
			if r != nil {
				r.CatalogInfo = r.CatalogInfo.Brief(catalogActionNames)
			}
			return CatalogImportOut{r}, err
		})
	addTool(s, &mcp.Tool{Name: "catalog_list", Title: "List catalogs", Annotations: readOnly,
		Description: "The imported OpenAPI catalogs, each with its first 50 action names (actions_total counts all)."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (CatalogListOut, error) {
			cs, err := s.svc.ListCatalogs(ctx)
			return CatalogListOut{Catalogs: briefCatalogs(cs)}, err
		})
	addTool(s, &mcp.Tool{Name: "catalog_set_enabled", Title: "Enable or disable a catalog",
		Description: "Enable a catalog (its operations become actions) or disable it (workflows using them stop validating).",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(false), IdempotentHint: true, OpenWorldHint: ptr(false)}},
		func(ctx context.Context, _ *mcp.CallToolRequest, in CatalogSetEnabledIn) (CatalogOut, error) {
			c, err := s.svc.SetCatalogEnabled(ctx, in.Name, in.Enabled)
			if err == nil {
				s.catalogsChanged(ctx)
			}
			return CatalogOut{CatalogInfo: brief(c)}, err
		})
	addTool(s, &mcp.Tool{Name: "catalog_remove", Title: "Remove a catalog",
		Description: "Remove a catalog and its actions. Destructive: the person confirms (elicitation, else ask them and pass confirm: true).",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true), OpenWorldHint: ptr(false)}},
		func(ctx context.Context, req *mcp.CallToolRequest, in CatalogRemoveIn) (CatalogOut, error) {
			// Refuse what cannot be removed before asking the person.
			c, err := s.svc.GetCatalog(ctx, in.Name)
			if err != nil {
				return CatalogOut{}, err
			}
			what := fmt.Sprintf("remove catalog %s and its %d actions", in.Name, c.Operations)
			if err := s.confirmDestructive(ctx, req, in.Confirm, what); err != nil {
				return CatalogOut{}, err
			}
			c, err = s.svc.RemoveCatalog(ctx, in.Name)
			if err == nil {
				s.catalogsChanged(ctx)
			}
			return CatalogOut{CatalogInfo: brief(c), Removed: err == nil}, err
		})
	s.addResource(&mcp.Resource{URI: uriCatalogs, Name: "catalogs", Title: "OpenAPI catalogs",
		Description: "Every imported OpenAPI catalog (as catalog_list returns them).", MIMEType: "application/json"},
		func(ctx context.Context, _ *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			cs, err := s.svc.ListCatalogs(ctx)
			if err != nil {
				return nil, err
			}
			return jsonResource(uriCatalogs, CatalogListOut{Catalogs: briefCatalogs(cs)})
		})
}

// catalogActionNames is how many of a catalog's action names the catalog
// tools and stepwise://catalogs show (actions_total counts them all;
// action_search and stepwise://actions list them).
const catalogActionNames = 50

// brief is c with at most catalogActionNames action names.
func brief(c *service.CatalogInfo) *service.CatalogInfo {
	if c == nil {
		return nil
	}
	b := c.Brief(catalogActionNames)
	return &b
}

// briefCatalogs is cs with at most catalogActionNames action names each.
func briefCatalogs(cs []service.CatalogInfo) []service.CatalogInfo {
	out := make([]service.CatalogInfo, len(cs))
	for i, c := range cs {
		out[i] = c.Brief(catalogActionNames)
	}
	return out
}

// catalogsChanged tells subscribers that the catalogs, and with them the
// actions, changed.
func (s *Server) catalogsChanged(ctx context.Context) {
	s.updated(ctx, uriCatalogs)
	s.updated(ctx, uriActions)
}

// syncCatalogs picks up catalogs changed by another process (the CLI) on
// the library's poll.
func (s *Server) syncCatalogs(ctx context.Context) {
	if s.svc.SyncCatalogs() {
		s.catalogsChanged(ctx)
	}
}
