package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"stepwise.dev/stepwise/internal/clip"
	"stepwise.dev/stepwise/internal/library"
)

// Options are the operator's choices for an import.
type Options struct {
	// Name of the catalog (the prefix of its actions); default: from Title.
	Name string
	// Title is required: it names the catalog for people.
	Title string
	// BaseURL overrides the document's servers.
	BaseURL string
	Enabled bool
	// Auth holds credentials by security scheme name ($NAME references).
	Auth map[string]Credential
	// Location is where the document came from (a path or URL), if anywhere.
	Location string
	// DryRun turns what only an import needs (a base URL) into warnings.
	DryRun bool
	// Now is the import's time (default time.Now).
	Now func() time.Time
}

// Report is what Validate finds in a document.
type Report struct {
	Valid bool `json:"valid"`
	// OpenAPI is the document's version (2.0, 3.0.x, 3.1.x).
	OpenAPI string `json:"openapi,omitempty"`
	// Title is the document's info.title.
	Title string `json:"title,omitempty"`
	// BaseURL is the document's first server, when it has an absolute one.
	BaseURL         string            `json:"base_url,omitempty"`
	Operations      int               `json:"operations"`
	SecuritySchemes map[string]Scheme `json:"security_schemes,omitempty"`
	// Problems prevent an import; warnings do not.
	Problems []string `json:"problems"`
	Warnings []string `json:"warnings"`
}

// Validate parses a document and reports what an import would make of it.
func Validate(ctx context.Context, data []byte, location string) *Report {
	r := &Report{Problems: []string{}, Warnings: []string{}}
	d, err := parse(ctx, data)
	if err != nil {
		r.Problems = problemsOf(err)
		return r
	}
	b := &builder{doc: d}
	ops := b.operations()
	r.OpenAPI, r.Title, r.Operations, r.SecuritySchemes = d.version, d.title(), len(ops), d.schemes()
	if u := d.serverURL(location); checkBaseURL(u) == nil {
		r.BaseURL = u
	} else {
		b.note("server", "", "the document names no absolute server URL: give base_url when importing it")
	}
	r.Warnings = append(append(r.Warnings, d.warnings...), b.warnings()...)
	if len(ops) == 0 {
		r.Problems = append(r.Problems, "the document has no operation a catalog can call")
	}
	r.Valid = len(r.Problems) == 0
	return r
}

// Build makes the catalog an import of data stores, with the warnings of
// what was skipped or renamed. Errors: ErrUnsafeName (library) for a name
// that could leave the catalogs directory, ErrSecretInClear for a
// credential given in clear, an *InvalidError for anything else.
func Build(ctx context.Context, data []byte, o Options) (*Catalog, []string, error) {
	title := strings.TrimSpace(o.Title)
	if title == "" {
		return nil, nil, invalid("a catalog needs a title")
	}
	name := o.Name
	if name == "" {
		if name = NameFromTitle(title); name == "" {
			return nil, nil, invalid("no name can be made from the title %q: give a name", title)
		}
	}
	if err := CheckName(name); err != nil {
		return nil, nil, err
	}
	d, err := parse(ctx, data)
	if err != nil {
		return nil, nil, err
	}
	b := &builder{doc: d}
	ops := b.operations()
	if len(ops) == 0 {
		return nil, nil, invalid("the document has no operation a catalog can call")
	}
	warnings := append(append([]string{}, d.warnings...), b.warnings()...)
	base := o.BaseURL
	if base == "" {
		base = d.serverURL(o.Location)
	}
	if err := checkBaseURL(base); err != nil {
		if !o.DryRun {
			return nil, nil, err
		}
		warnings = append(warnings, err.Error())
	}
	schemes := d.schemes()
	if err := checkAuth(o.Auth, schemes); err != nil {
		return nil, nil, err
	}
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	c := &Catalog{Format: FormatVersion, Name: name, Title: title, BaseURL: strings.TrimRight(base, "/"), Enabled: o.Enabled,
		Auth: o.Auth, Schemes: schemes, Operations: ops, ImportedAt: now().UTC(),
		Source: Source{Location: o.Location, OpenAPI: d.version, Document: string(data)}}
	// What is used now is exactly what is stored and read back later.
	if err := roundTrip(c); err != nil {
		return nil, nil, err
	}
	return c, warnings, nil
}

// CheckName refuses a name that is not a safe file name (wrapping
// library.ErrUnsafeName) or that cannot prefix action names.
func CheckName(name string) error {
	if err := library.CheckName(name); err != nil {
		return fmt.Errorf("catalog name: %w", err)
	}
	if c := name[0]; c < 'a' || c > 'z' {
		return invalid("catalog name %q: it must start with a letter (it prefixes action names)", name)
	}
	return nil
}

// checkBaseURL accepts absolute http and https URLs.
func checkBaseURL(base string) error {
	if base == "" {
		return invalid("the document names no server URL: give base_url")
	}
	u, err := url.Parse(base)
	if err != nil || !u.IsAbs() || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return invalid("base URL %q: want an absolute http or https URL (give base_url)", base)
	}
	return nil
}

// roundTrip replaces c's content by its JSON form read back: numbers
// become float64, lists []any, as when the file is loaded.
func roundTrip(c *Catalog) error {
	name := c.Name
	data, err := json.Marshal(c)
	if err != nil {
		return fmt.Errorf("catalog %s: %w", name, err)
	}
	*c = Catalog{}
	if err := json.Unmarshal(data, c); err != nil {
		return fmt.Errorf("catalog %s: %w", name, err)
	}
	return nil
}

// problemsOf lists the problems an error carries.
func problemsOf(err error) []string {
	var ie *InvalidError
	if errors.As(err, &ie) {
		return ie.Problems
	}
	return []string{err.Error()}
}

// Preview is a dry run of an import: a summary of the operations (counts
// by tag and by safety tier) and a page of them.
type Preview struct {
	Name    string `json:"name"`
	Title   string `json:"title"`
	BaseURL string `json:"base_url,omitempty"`
	OpenAPI string `json:"openapi"`
	// OperationsTotal counts the operations; Operations is a page of them.
	OperationsTotal int                `json:"operations_total"`
	Operations      []OperationSummary `json:"operations"`
	// OperationsNextCursor is the cursor of the next page of operations
	// ("" after the last).
	OperationsNextCursor string `json:"operations_next_cursor,omitempty"`
	// Tags counts the operations by tag ("untagged" for the others): the
	// maxPreviewTags tags with most operations.
	Tags map[string]int `json:"tags"`
	// TagsTotal counts the distinct tags, when Tags does not hold them all.
	TagsTotal int `json:"tags_total,omitempty"`
	// Safety counts the operations by safety tier.
	Safety          map[string]int    `json:"safety"`
	SecuritySchemes map[string]Scheme `json:"security_schemes,omitempty"`
	Warnings        []string          `json:"warnings"`
}

// OperationSummary is one operation as a list shows it.
type OperationSummary struct {
	Action  string   `json:"action"`
	Method  string   `json:"method"`
	Path    string   `json:"path"`
	Summary string   `json:"summary,omitempty"`
	Safety  string   `json:"safety"`
	Tags    []string `json:"tags,omitempty"`
}

// Untagged is the group of operations without tags.
const Untagged = "untagged"

// Bounds of a preview, so that it stays small whatever the document.
const (
	// PreviewSummaryOperations is how many operations a preview shows
	// when no page is asked for.
	PreviewSummaryOperations = 20
	// MaxPreviewPage bounds a page of operations.
	MaxPreviewPage = 200
	// maxPreviewTags bounds the tags a preview counts by.
	maxPreviewTags = 100
	// maxPreviewText bounds an operation's summary, path and each tag.
	maxPreviewText = 200
)

// Page is the page of operations a preview shows: from Offset, at most
// Limit of them (0: PreviewSummaryOperations; at most MaxPreviewPage).
type Page struct {
	Offset, Limit int
}

// Preview describes the catalog for a dry run: the operations of page.
func (c *Catalog) Preview(warnings []string, page Page) *Preview {
	p := &Preview{Name: c.Name, Title: c.Title, BaseURL: c.BaseURL, OpenAPI: c.Source.OpenAPI,
		OperationsTotal: len(c.Operations), Operations: []OperationSummary{},
		Tags: map[string]int{}, Safety: map[string]int{}, SecuritySchemes: c.Schemes, Warnings: warnings}
	if p.Warnings == nil {
		p.Warnings = []string{}
	}
	limit := page.Limit
	if limit <= 0 {
		limit = PreviewSummaryOperations
	}
	limit = min(limit, MaxPreviewPage)
	offset := max(page.Offset, 0)
	for i := range c.Operations {
		op := &c.Operations[i]
		p.Safety[op.Safety]++
		tags := op.Tags
		if len(tags) == 0 {
			tags = []string{Untagged}
		}
		for _, t := range tags {
			p.Tags[clip.Text(t, maxPreviewText)]++
		}
		if i < offset || len(p.Operations) == limit {
			continue
		}
		sum := OperationSummary{Action: c.ActionName(op), Method: op.Method, Path: clip.Text(op.Path, maxPreviewText),
			Summary: clip.Text(op.Summary, maxPreviewText), Safety: op.Safety}
		for _, t := range op.Tags[:min(len(op.Tags), 10)] {
			sum.Tags = append(sum.Tags, clip.Text(t, maxPreviewText))
		}
		p.Operations = append(p.Operations, sum)
	}
	if next := offset + len(p.Operations); next < len(c.Operations) {
		p.OperationsNextCursor = strconv.Itoa(next)
	}
	if len(p.Tags) > maxPreviewTags {
		p.TagsTotal = len(p.Tags)
		p.Tags = topTags(p.Tags, maxPreviewTags)
	}
	return p
}

// topTags keeps the n tags with most operations (ties by name).
func topTags(counts map[string]int, n int) map[string]int {
	names := make([]string, 0, len(counts))
	for t := range counts {
		names = append(names, t)
	}
	sort.Slice(names, func(i, j int) bool {
		if counts[names[i]] != counts[names[j]] {
			return counts[names[i]] > counts[names[j]]
		}
		return names[i] < names[j]
	})
	out := make(map[string]int, n)
	for _, t := range names[:n] {
		out[t] = counts[t]
	}
	return out
}
