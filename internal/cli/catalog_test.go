package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCatalogCommands(t *testing.T) {
	home := t.TempDir()
	doc := "../catalog/testdata/petstore-swagger2.yaml"
	if code, _, errOut := runOut(t, home, "catalog", "import", doc); code != ExitInvalid || !strings.Contains(errOut, "needs a title") {
		t.Fatalf("import without title: %d %s", code, errOut)
	}
	if code, _, errOut := runOut(t, home, "catalog", "import", doc, "--title", "Petstore", "--auth", "api_key=sk-literal-0123456789"); code != ExitUsage ||
		!strings.Contains(errOut, "environment reference") || strings.Contains(errOut, "sk-literal-0123456789") {
		t.Fatalf("literal secret: %d %s", code, errOut)
	}
	if code, _, errOut := runOut(t, home, "catalog", "import", doc, "--title", "Petstore", "--name", "../x"); code != ExitUsage || !strings.Contains(errOut, "..") {
		t.Fatalf("unsafe name: %d %s", code, errOut)
	}
	code, out, errOut := runOut(t, home, "catalog", "import", doc, "--title", "Petstore", "--base-url", "http://127.0.0.1:9/v1",
		"--auth", "api_key=$PETSTORE_KEY", "--auth", "basic=alice:$PETSTORE_PW")
	if code != ExitOK || !strings.Contains(out, "imported catalog petstore (enabled, 5 actions)") || !strings.Contains(out, "petstore.getPet") {
		t.Fatalf("import: %d %s %s", code, out, errOut)
	}
	file, _ := os.ReadFile(filepath.Join(home, "catalogs", "petstore.json"))
	if !strings.Contains(string(file), `"password": "$PETSTORE_PW"`) || !strings.Contains(string(file), `"username": "alice"`) {
		t.Errorf("auth not stored as references: %.400s", file)
	}
	if code, _, errOut := runOut(t, home, "catalog", "import", doc, "--title", "Petstore"); code != ExitInvalid || !strings.Contains(errOut, "overwrite") {
		t.Fatalf("import again: %d %s", code, errOut)
	}
	if code, out, _ := runOut(t, home, "catalog", "import", doc, "--title", "Petstore", "--overwrite", "--disabled"); code != ExitOK || !strings.Contains(out, "disabled") {
		t.Fatalf("overwrite: %d %s", code, out)
	}
	if code, out, _ := runOut(t, home, "catalog", "list"); code != ExitOK || !strings.Contains(out, "petstore") || !strings.Contains(out, "disabled") {
		t.Fatalf("list: %d %s", code, out)
	}
	if code, out, _ := runOut(t, home, "catalog", "enable", "petstore"); code != ExitOK || !strings.Contains(out, "enabled catalog petstore") {
		t.Fatalf("enable: %d %s", code, out)
	}
	if code, out, _ := runOut(t, home, "catalog", "disable", "petstore"); code != ExitOK || !strings.Contains(out, "disabled catalog petstore") {
		t.Fatalf("disable: %d %s", code, out)
	}
	// No terminal: remove needs --yes and removes nothing without it.
	if code, _, errOut := runOut(t, home, "catalog", "remove", "petstore"); code != ExitUsage || !strings.Contains(errOut, "--yes") {
		t.Fatalf("remove without --yes: %d %s", code, errOut)
	}
	if code, out, _ := runOut(t, home, "catalog", "remove", "--yes", "petstore"); code != ExitOK || !strings.Contains(out, "removed catalog petstore") {
		t.Fatalf("remove: %d %s", code, out)
	}
	if code, _, errOut := runOut(t, home, "catalog", "remove", "--yes", "petstore"); code != ExitUsage || !strings.Contains(errOut, "no catalog") {
		t.Fatalf("remove again: %d %s", code, errOut)
	}
	if code, out, _ := runOut(t, home, "catalog", "list"); code != ExitOK || !strings.Contains(out, "no catalogs") {
		t.Fatalf("list after remove: %d %s", code, out)
	}
}
