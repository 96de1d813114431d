package catalog

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/golden")

// TestGolden builds every document of testdata and compares the catalog
// (operations, schemas, security, base URL) and the warnings about what
// was skipped or renamed with testdata/golden/<document>.json. The
// departures from the specification are left out: their wording is the
// checker's. go test -run TestGolden -update rewrites the files.
func TestGolden(t *testing.T) {
	docs, err := filepath.Glob("testdata/*.*")
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range docs {
		name := filepath.Base(doc)
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(doc)
			if err != nil {
				t.Fatal(err)
			}
			c, warnings, err := Build(context.Background(), data, Options{Title: "Golden", DryRun: true,
				Now: func() time.Time { return time.Unix(0, 0) }})
			if err != nil {
				t.Fatal(err)
			}
			c.Source.Document = ""
			kept := []string{}
			for _, w := range warnings {
				if !strings.HasPrefix(w, specPrefix) && !strings.HasPrefix(w, "… and") {
					kept = append(kept, w)
				}
			}
			got, err := json.MarshalIndent(map[string]any{"catalog": c, "warnings": kept}, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			file := filepath.Join("testdata", "golden", strings.TrimSuffix(name, filepath.Ext(name))+".json")
			if *update {
				if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(file, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs from %s:\n%s", name, file, got)
			}
		})
	}
}
