package catalog

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParse feeds arbitrary bytes to the document reader and, when they
// load, to everything Validate does with them: nothing may panic.
//
//	go test ./catalog -run '^$' -fuzz FuzzParse -fuzztime 1m
func FuzzParse(f *testing.F) {
	docs, _ := filepath.Glob("testdata/*.*")
	for _, doc := range docs {
		if data, err := os.ReadFile(doc); err == nil {
			f.Add(data)
		}
	}
	for _, seed := range []string{swaggerForms, schemas30, schemas31, doc30,
		"openapi: 3.1.0\ninfo: {title: x, version: '1'}\npaths: {/a: {get: {parameters: [{$ref: '#/paths'}], responses: {'200': {$ref: '#'}}}}}\n",
		"swagger: '2.0'\nparameters: {P: {$ref: '#/parameters/P'}}\npaths: {/a: {get: {parameters: [{$ref: '#/parameters/P'}]}}}\n",
		"a: &a {b: *a}\n", "<<: {openapi: 3.0.0}\n", "{\"openapi\": 3.1, \"paths\": []}", "- 1\n", "",
	} {
		f.Add([]byte(seed))
	}
	// Aliases that expand beyond the bound: a large scalar many times, and
	// aliases of aliases (billion laughs).
	f.Add([]byte("openapi: 3.0.3\npaths: {/a: {get: {description: &d '" + strings.Repeat("x", 70_000) + "', tags: [" + strings.Repeat("*d, ", 999) + "*d]}}}\n"))
	f.Add(laughs(5, 10, 1000))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := Validate(context.Background(), data, "https://example.com/doc.yaml")
		if r.Valid == (len(r.Problems) > 0) {
			t.Fatalf("valid %v with problems %v", r.Valid, r.Problems)
		}
	})
}
