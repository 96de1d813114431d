package catalog

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// FormatVersion is the version of the catalog file's layout; a file of
// another version is refused rather than misread.
const FormatVersion = 1

// Catalog is one imported API, as stored in <home>/catalogs/<name>.json.
type Catalog struct {
	Format  int    `json:"format"`
	Name    string `json:"name"`
	Title   string `json:"title"`
	BaseURL string `json:"base_url"`
	Enabled bool   `json:"enabled"`
	// Auth holds the credentials by security scheme name: environment
	// references only, resolved when an operation is called.
	Auth map[string]Credential `json:"auth,omitempty"`
	// Schemes are the document's security schemes.
	Schemes    map[string]Scheme `json:"security_schemes,omitempty"`
	Operations []Operation       `json:"operations"`
	Source     Source            `json:"source"`
	ImportedAt time.Time         `json:"imported_at"`
}

// Source is the document a catalog was imported from, kept whole so that
// it can be imported again (or inspected) without the original.
type Source struct {
	// Location is the file path or URL ("" for a document given inline).
	Location string `json:"location,omitempty"`
	// OpenAPI is the document's version: 2.0 (Swagger), 3.0.x or 3.1.x.
	OpenAPI  string `json:"openapi"`
	Document string `json:"document"`
}

// Operation is one operation of the document, normalized.
type Operation struct {
	// Name is the part after the dot in the action's name.
	Name        string   `json:"name"`
	OperationID string   `json:"operation_id,omitempty"`
	Method      string   `json:"method"`
	Path        string   `json:"path"`
	Summary     string   `json:"summary,omitempty"`
	Description string   `json:"description,omitempty"`
	Tags        []string `json:"tags,omitempty"`
	Deprecated  bool     `json:"deprecated,omitempty"`
	Safety      string   `json:"safety"`
	Params      []Param  `json:"params,omitempty"`
	Body        *Body    `json:"body,omitempty"`
	// Security lists the alternatives of security schemes the operation
	// accepts (each alternative needs all its schemes); empty: none.
	Security     [][]string     `json:"security,omitempty"`
	InputSchema  map[string]any `json:"input_schema"`
	OutputSchema map[string]any `json:"output_schema,omitempty"`
}

// Param is a path, query or header parameter: Key is its name in the
// action's input (its own name, unless two parameters share it).
type Param struct {
	Key      string `json:"key"`
	Name     string `json:"name"`
	In       string `json:"in"`
	Required bool   `json:"required,omitempty"`
	// Explode: an array in the query is sent as repeated keys (the
	// default) rather than one comma-separated value.
	Explode bool `json:"explode,omitempty"`
}

// Body is an operation's request body, the input key "body".
type Body struct {
	Required  bool   `json:"required,omitempty"`
	MediaType string `json:"media_type"`
}

// bodyKey is the input key of the request body.
const bodyKey = "body"

// ActionName is the name steps call the operation by.
func (c *Catalog) ActionName(op *Operation) string { return c.Name + "." + op.Name }

// Errors the package returns; callers match them with errors.Is.
var (
	// ErrExists: a catalog of that name exists and overwrite was not asked.
	ErrExists = errors.New("catalog exists")
	// ErrNotFound: no catalog of that name.
	ErrNotFound = errors.New("catalog not found")
	// ErrInvalid: the document (or the import's options) cannot make a
	// catalog; the error is an *InvalidError listing the problems.
	ErrInvalid = errors.New("catalog invalid")
	// ErrSecretInClear: a credential was given as a value, not as $NAME.
	ErrSecretInClear = errors.New("secret in clear")
	// ErrURLNotAllowed: a source URL while the operator did not allow them.
	ErrURLNotAllowed = errors.New("catalog URLs not allowed")
)

// InvalidError lists why a document or an import was refused.
type InvalidError struct {
	Problems []string
}

func (e *InvalidError) Error() string {
	if len(e.Problems) == 0 {
		return "the catalog is invalid"
	}
	msg := e.Problems[0]
	if n := len(e.Problems) - 1; n > 0 {
		msg += fmt.Sprintf(" (and %d more)", n)
	}
	return msg
}

// Is makes errors.Is(err, ErrInvalid) hold.
func (e *InvalidError) Is(target error) bool { return target == ErrInvalid }

func invalid(format string, args ...any) error {
	return &InvalidError{Problems: []string{fmt.Sprintf(format, args...)}}
}

// NameFromTitle derives a catalog name from a title: lowercase letters
// and digits, other runs of characters become "-" ("Pet Store v2" →
// "pet-store-v2"). It returns "" when nothing is left.
func NameFromTitle(title string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(title) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
		default:
			dash = true
		}
		if b.Len() >= 64 {
			break
		}
	}
	name := b.String()
	if len(name) > 64 {
		name = name[:64]
	}
	// Action names start with a letter: strip a leading digit run.
	return strings.TrimLeft(strings.TrimLeft(name, "0123456789"), "-")
}
