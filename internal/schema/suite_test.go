package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// suiteDir finds the tests of the official JSON-Schema-Test-Suite: the
// directory STEPWISE_JSON_SCHEMA_SUITE names (the tests/ directory of a
// checkout of github.com/json-schema-org/JSON-Schema-Test-Suite), or else
// the copy that github.com/google/jsonschema-go ships in its module (the
// go-sdk's dependency, so the version go.sum pins is in the module cache
// wherever stepwise builds): upstream commit 83e866b's draft2020-12 and
// draft7 tests, without their optional/ directories nor, for 2020-12,
// content.json, format.json and vocabulary.json.
func suiteDir(t *testing.T) string {
	if dir := os.Getenv("STEPWISE_JSON_SCHEMA_SUITE"); dir != "" {
		return dir
	}
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/google/jsonschema-go").Output()
	dir := strings.TrimSpace(string(out))
	if err != nil || dir == "" {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Logf("go list: %s", ee.Stderr)
		}
		msg := fmt.Sprintf("JSON-Schema-Test-Suite not found: run `go mod download github.com/google/jsonschema-go` or set STEPWISE_JSON_SCHEMA_SUITE (%v)", err)
		if os.Getenv("CI") != "" {
			t.Fatal(msg) // CI runs the suite
		}
		t.Skip(msg)
	}
	return filepath.Join(dir, "jsonschema", "testdata")
}

// TestOfficialSuite runs the official JSON-Schema-Test-Suite, drafts
// 2020-12 and 7: every case passes but those whose schema refers to
// another document (the suite's remotes, at localhost:1234), which
// Compile refuses with ErrRemoteRef.
func TestOfficialSuite(t *testing.T) {
	dir := suiteDir(t)
	for _, draft := range []struct{ dir, uri string }{
		{"draft2020-12", "https://json-schema.org/draft/2020-12/schema"},
		{"draft7", "http://json-schema.org/draft-07/schema#"},
	} {
		t.Run(draft.dir, func(t *testing.T) {
			files, err := filepath.Glob(filepath.Join(dir, draft.dir, "*.json"))
			if err != nil || len(files) == 0 {
				t.Fatalf("no test files in %s: %v", filepath.Join(dir, draft.dir), err)
			}
			passed, skipped := 0, 0
			for _, f := range files {
				data, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				var groups []struct {
					Description string
					Schema      json.RawMessage
					Tests       []struct {
						Description string
						Data        json.RawMessage
						Valid       bool
					}
				}
				if err := json.Unmarshal(data, &groups); err != nil {
					t.Fatalf("%s: %v", f, err)
				}
				for _, g := range groups {
					name := filepath.Base(f) + ": " + g.Description
					doc := suiteJSON(t, g.Schema)
					if m, ok := doc.(map[string]any); ok && m["$schema"] == nil {
						m["$schema"] = draft.uri
					}
					s, err := Compile(doc)
					if errors.Is(err, ErrRemoteRef) && bytes.Contains(g.Schema, []byte("localhost:1234")) {
						skipped += len(g.Tests) // the suite's remotes: remote references stay refused
						continue
					}
					if err != nil {
						t.Errorf("%s: %v", name, err)
						continue
					}
					for _, c := range g.Tests {
						err := s.Validate(suiteJSON(t, c.Data))
						if (err == nil) != c.Valid {
							t.Errorf("%s: %s: valid=%v, got %v", name, c.Description, c.Valid, err)
							continue
						}
						if err != nil {
							checkError(t, err, suiteJSON(t, c.Data))
						}
						passed++
					}
				}
			}
			t.Logf("%s: %d cases passed, %d skipped (remote references)", draft.dir, passed, skipped)
		})
	}
}

// suiteJSON decodes a schema or value of the suite, numbers as
// json.Number (exact, as the suite's big numbers need).
func suiteJSON(t *testing.T, data []byte) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}
