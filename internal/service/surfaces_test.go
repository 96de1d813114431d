package service_test

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestSurfacesUseTheFacade: the surfaces (cli, mcpserver, web) reach the
// engine and the store only through service (and their constants through
// code): no non-test file of theirs imports engine or store.
func TestSurfacesUseTheFacade(t *testing.T) {
	t.Parallel()
	forbidden := map[string]bool{
		"stepwise.dev/stepwise/internal/engine":         true,
		"stepwise.dev/stepwise/internal/store":          true,
		"stepwise.dev/stepwise/internal/store/sqlite":   true,
		"stepwise.dev/stepwise/internal/store/postgres": true,
	}
	fset := token.NewFileSet()
	checked := 0
	// The surfaces, from here: cli, mcpserver, web, api and the root package
	// (the public Go API).
	for _, dir := range []string{"cli", "mcpserver", "web", "api", ".."} {
		entries, err := os.ReadDir(filepath.Join("..", dir))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			name := e.Name()
			if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
				continue
			}
			path := filepath.Join("..", dir, name)
			f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			checked++
			for _, imp := range f.Imports {
				p, err := strconv.Unquote(imp.Path.Value)
				if err != nil {
					t.Fatal(err)
				}
				if forbidden[p] {
					t.Errorf("%s/%s imports %s: use package service (types, functions) or code (constants)", dir, name, p)
				}
			}
		}
	}
	if checked < 30 {
		t.Fatalf("checked %d files of cli, mcpserver and web; want them all (at least 30)", checked)
	}
}
