package service

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"stepwise.dev/stepwise/internal/action"
)

// searchEnv is a service whose library holds the given files.
func searchEnv(t *testing.T, files map[string]string) (*Service, string) {
	t.Helper()
	dir := t.TempDir()
	lib := filepath.Join(dir, "workflows")
	if err := os.MkdirAll(lib, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(lib, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	svc, err := Open(context.Background(), Options{Home: dir, Durability: "normal"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Close(context.Background()) })
	return svc, lib
}

// wf is a minimal valid workflow with a title, description and tags.
func wf(name, title, description string, tags ...string) string {
	tagList := ""
	if len(tags) > 0 {
		tagList = "tags: [" + strings.Join(tags, ", ") + "]\n"
	}
	return fmt.Sprintf("version: 1\nname: %s\ntitle: %q\ndescription: %q\n%sinputs:\n  target: {type: string, description: Where}\nsteps:\n  - id: a\n    uses: noop\n",
		name, title, description, tagList)
}

func find(t *testing.T, svc *Service, query string, includeWorkflows bool, limit int) []SearchResult {
	t.Helper()
	rs, err := svc.SearchActions(context.Background(), query, includeWorkflows, limit)
	if err != nil {
		t.Fatalf("search %q: %v", query, err)
	}
	return rs
}

func resultNames(rs []SearchResult) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Kind+":"+r.Name)
	}
	return out
}

var searchLibrary = map[string]string{
	"backup-database.yaml": wf("backup-database", "Back up a database", "Dumps a Postgres database to object storage.", "backup", "postgres"),
	"rotate-logs.yaml":     wf("rotate-logs", "Rotate logs", "Compresses and rotates application logs.", "maintenance"),
	"audit-access.yaml":    wf("audit-access", "Audit access", "Reviews who may deploy and writes a log of the findings.", "security", "compliance"),
	"deploy-api.yaml":      wf("deploy-api", "Deploy the API", "Builds and ships the API to Kubernetes.", "deploy", "kubernetes"),
}

func TestSearchRanksActionsAndWorkflows(t *testing.T) {
	svc, _ := searchEnv(t, searchLibrary)
	rs := find(t, svc, "log", true, 0)
	got := resultNames(rs)
	if len(got) < 3 || got[0] != "action:log" || got[1] != "workflow:rotate-logs" {
		t.Fatalf("log: %v, want the action log (exact name), then rotate-logs (name), then mentions", got)
	}
	if !slices.Contains(got, "workflow:audit-access") {
		t.Errorf("log: %v, want audit-access (description) too", got)
	}
	if rs[0].Safety != "read-only" || rs[0].Description == "" || rs[0].Valid != nil {
		t.Errorf("action result %+v, want safety and description", rs[0])
	}
	w := rs[1]
	if w.Title != "Rotate logs" || !slices.Equal(w.Tags, []string{"maintenance"}) || w.Valid == nil || !*w.Valid ||
		len(w.Inputs) != 1 || w.Inputs[0].Name != "target" || w.Safety != "" {
		t.Errorf("workflow result %+v, want title, tags, validity and inputs", w)
	}
	if rs[0].Score <= rs[1].Score || rs[1].Score <= rs[len(rs)-1].Score {
		t.Errorf("scores not decreasing: %v", rs)
	}
}

func TestSearchTagsMultiTermAndTypos(t *testing.T) {
	svc, _ := searchEnv(t, searchLibrary)
	if got := resultNames(find(t, svc, "compliance", true, 0)); !slices.Equal(got, []string{"workflow:audit-access"}) {
		t.Errorf("compliance (a tag): %v", got)
	}
	if got := resultNames(find(t, svc, "ship api kubernetes", true, 0)); len(got) == 0 || got[0] != "workflow:deploy-api" {
		t.Errorf("ship api kubernetes: %v", got)
	}
	if got := resultNames(find(t, svc, "postgress databse", true, 0)); len(got) == 0 || got[0] != "workflow:backup-database" {
		t.Errorf("postgress databse (typos): %v", got)
	}
	if got := resultNames(find(t, svc, "transfrom", true, 0)); len(got) == 0 || got[0] != "action:transform" {
		t.Errorf("transfrom (a typo): %v", got)
	}
}

func TestSearchIncludeWorkflowsAndLimit(t *testing.T) {
	svc, _ := searchEnv(t, searchLibrary)
	for _, r := range find(t, svc, "log", false, 0) {
		if r.Kind != KindAction {
			t.Errorf("include_workflows false returned %s %s", r.Kind, r.Name)
		}
	}
	if got := find(t, svc, "log", true, 2); len(got) != 2 {
		t.Errorf("limit 2: %v", resultNames(got))
	}
	actions := len(svc.Actions.Names())
	all := find(t, svc, "", true, MaxSearchLimit)
	if len(all) != actions+4 || !slices.IsSortedFunc(all, func(a, b SearchResult) int { return cmpString(a.Name, b.Name) }) {
		t.Errorf("empty query: %v, want the %d actions and 4 workflows by name", resultNames(all), actions)
	}
	if got := find(t, svc, "", false, MaxSearchLimit); len(got) != actions {
		t.Errorf("empty query, actions only: %v, want %d", resultNames(got), actions)
	}
	if got := find(t, svc, "", true, 1000); len(got) != actions+4 {
		t.Errorf("limit above the maximum: %v", resultNames(got))
	}
}

// fakeAction is an action registered by a test.
type fakeAction struct{ name, description string }

func (f fakeAction) Name() string        { return f.name }
func (f fakeAction) Description() string { return f.description }
func (f fakeAction) Safety() string      { return action.Destructive }
func (f fakeAction) Run(context.Context, action.Call) (any, error) {
	return nil, nil
}

// Actions registered, replaced or removed later (catalogs do that) are
// searched from the next query.
func TestSearchFollowsTheRegistry(t *testing.T) {
	svc, _ := searchEnv(t, nil)
	if got := find(t, svc, "invoice", false, 0); len(got) != 0 {
		t.Fatalf("invoice before: %v", resultNames(got))
	}
	svc.Actions.Register(fakeAction{"billing_void_invoice", "Voids an invoice."})
	rs := find(t, svc, "invoice", false, 0)
	if len(rs) != 1 || rs[0].Name != "billing_void_invoice" || rs[0].Safety != action.Destructive {
		t.Fatalf("invoice after registering: %+v", rs)
	}
	svc.Actions.Register(fakeAction{"billing_void_invoice", "Cancels a bill."})
	if got := resultNames(find(t, svc, "cancels", false, 0)); !slices.Equal(got, []string{"action:billing_void_invoice"}) {
		t.Fatalf("cancels after replacing: %v", got)
	}
	svc.Actions.Unregister("billing_void_invoice")
	if got := find(t, svc, "invoice", false, 0); len(got) != 0 {
		t.Fatalf("invoice after removing: %v", resultNames(got))
	}
}

// A result shows the start of a long description: a hundred results of an
// API's long descriptions would be more than an agent can hold.
func TestSearchResultsHoldTheStartOfLongDescriptions(t *testing.T) {
	svc, _ := searchEnv(t, nil)
	svc.Actions.Register(fakeAction{"billing_void_invoice", "Voids an invoice. " + strings.Repeat("More about it. ", 10000)})
	rs := find(t, svc, "invoice", false, 0)
	if len(rs) != 1 || len(rs[0].Description) > maxSearchText || !strings.HasPrefix(rs[0].Description, "Voids an invoice.") || !strings.HasSuffix(rs[0].Description, "…") {
		t.Fatalf("%d results, the first's description of %d bytes", len(rs), len(rs[0].Description))
	}
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// The next search after a file is added, rewritten or removed reflects
// it, however the file was changed.
func TestSearchFollowsTheLibrary(t *testing.T) {
	svc, lib := searchEnv(t, searchLibrary)
	names := func(query string) []string { return resultNames(find(t, svc, query, true, 0)) }
	if got := names("zebra"); len(got) != 0 {
		t.Fatalf("zebra before: %v", got)
	}
	write := func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(lib, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Added.
	write("zebra-crossing.yaml", wf("zebra-crossing", "Cross the road", "Waits for the lights."))
	if got := names("zebra"); !slices.Equal(got, []string{"workflow:zebra-crossing"}) {
		t.Fatalf("zebra after adding: %v", got)
	}
	// Replaced by renaming a new version over it, as editors save.
	write(".tmp", wf("zebra-crossing", "Cross the road", "Waits for the giraffe."))
	if err := os.Rename(filepath.Join(lib, ".tmp"), filepath.Join(lib, "zebra-crossing.yaml")); err != nil {
		t.Fatal(err)
	}
	if got := names("giraffe"); !slices.Equal(got, []string{"workflow:zebra-crossing"}) {
		t.Fatalf("giraffe after renaming over: %v", got)
	}
	// Rewritten in place once the directory has settled, so that only the
	// invalidation hook, another listing or the background recheck can
	// tell.
	settle(t, svc, lib)
	write("zebra-crossing.yaml", wf("zebra-crossing", "Cross the road", "Waits for the elephant."))
	svc.InvalidateSearch()
	if got := names("elephant"); !slices.Equal(got, []string{"workflow:zebra-crossing"}) {
		t.Fatalf("elephant after an in-place write and InvalidateSearch: %v", got)
	}
	settle(t, svc, lib)
	write("zebra-crossing.yaml", wf("zebra-crossing", "Cross the road", "Waits for the hippopotamus."))
	if _, err := svc.ListWorkflows(context.Background(), ""); err != nil { // as workflow_list would
		t.Fatal(err)
	}
	if got := names("hippopotamus"); !slices.Equal(got, []string{"workflow:zebra-crossing"}) {
		t.Fatalf("hippopotamus after an in-place write another listing saw: %v", got)
	}
	settle(t, svc, lib)
	write("zebra-crossing.yaml", wf("zebra-crossing", "Cross the road", "Waits for the rhinoceros."))
	svc.search.recheck = time.Nanosecond
	names("zebra") // finds the index old and starts a background listing
	svc.search.bg.Wait()
	svc.search.recheck = 0
	if got := names("rhinoceros"); !slices.Equal(got, []string{"workflow:zebra-crossing"}) {
		t.Fatalf("rhinoceros after an in-place write and the background recheck: %v", got)
	}
	// Removed.
	if err := os.Remove(filepath.Join(lib, "zebra-crossing.yaml")); err != nil {
		t.Fatal(err)
	}
	if got := names("zebra"); len(got) != 0 {
		t.Fatalf("zebra after removing: %v", got)
	}
	// An invalid file is found, marked invalid.
	write("broken.yaml", "version: 1\nname: broken\ntitle: Broken thing\nsteps: []\n")
	rs := find(t, svc, "broken", true, 0)
	if len(rs) != 1 || rs[0].Valid == nil || *rs[0].Valid {
		t.Fatalf("broken: %+v, want one invalid workflow", rs)
	}
}

// settle dates the library directory a minute back and searches once, so
// that the index no longer counts as racy: only what the directory's time
// cannot show is left to detect.
func settle(t *testing.T, svc *Service, lib string) {
	t.Helper()
	past := time.Now().Add(-time.Minute)
	if err := os.Chtimes(lib, past, past); err != nil {
		t.Fatal(err)
	}
	find(t, svc, "settle", true, 1)
	snap := svc.search.lib.Load()
	if !svc.fresh(snap) {
		t.Fatal("the index is still not fresh after settling")
	}
}

// A search does not list the library again while nothing changed.
func TestSearchDoesNotListPerQuery(t *testing.T) {
	svc, lib := searchEnv(t, searchLibrary)
	settle(t, svc, lib)
	before := svc.search.lib.Load()
	for range 5 {
		find(t, svc, "deploy", true, 0)
	}
	if after := svc.search.lib.Load(); after != before {
		t.Error("the library was listed again although nothing changed")
	}
}

// On a file system that keeps whole seconds, a file added in the same
// second as the listing leaves the directory's time as it was: the index
// of that second counts as racy and the next search lists again.
func TestSearchSeesChangesWithinOneTimestampTick(t *testing.T) {
	svc, lib := searchEnv(t, searchLibrary)
	tick := time.Now().Truncate(time.Second)
	if err := os.Chtimes(lib, tick, tick); err != nil {
		t.Fatal(err)
	}
	find(t, svc, "zebra", true, 0)
	if err := os.WriteFile(filepath.Join(lib, "zebra.yaml"), []byte(wf("zebra", "Zebra", "Stripes.")), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(lib, tick, tick); err != nil { // as a coarse clock would have stamped it
		t.Fatal(err)
	}
	if got := resultNames(find(t, svc, "zebra", true, 0)); !slices.Equal(got, []string{"workflow:zebra"}) {
		t.Fatalf("zebra added within the tick of the last listing: %v", got)
	}
}

// Searches running while the library changes and background listings
// run see a consistent index (run with -race), and the last one sees the
// final library.
func TestSearchConcurrentWithChanges(t *testing.T) {
	svc, lib := searchEnv(t, searchLibrary)
	svc.search.recheck = time.Nanosecond
	done := make(chan struct{})
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			for {
				select {
				case <-done:
					errs <- nil
					return
				default:
				}
				rs, err := svc.SearchActions(context.Background(), "temporary log", true, 5)
				if err != nil {
					errs <- err
					return
				}
				for _, r := range rs {
					if r.Name == "" || (r.Kind == KindWorkflow && r.Valid == nil) {
						errs <- fmt.Errorf("malformed result %+v", r)
						return
					}
				}
			}
		}()
	}
	for i := range 30 {
		p := filepath.Join(lib, fmt.Sprintf("temporary-%d.yaml", i%5))
		if i%3 == 2 {
			_ = os.Remove(p)
		} else if err := os.WriteFile(p, []byte(wf(fmt.Sprintf("temporary-%d", i%5), "Temporary", fmt.Sprintf("Version %d.", i))), 0o644); err != nil {
			t.Fatal(err)
		}
		if i%4 == 0 {
			svc.InvalidateSearch()
		}
	}
	close(done)
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	svc.search.bg.Wait()
	svc.InvalidateSearch()
	ws, err := svc.ListWorkflows(context.Background(), "temporary-*")
	if err != nil {
		t.Fatal(err)
	}
	got := find(t, svc, "temporary", true, 100)
	if len(got) != len(ws) {
		t.Errorf("search found %v, the library has %d temporary workflows", resultNames(got), len(ws))
	}
}

// A save through the service invalidates the index: the next search
// lists the library again and finds the new workflow.
func TestSearchSeesSavesThroughTheService(t *testing.T) {
	svc, lib := searchEnv(t, searchLibrary)
	settle(t, svc, lib)
	if _, err := svc.SaveWorkflow(context.Background(), SaveRequest{Content: wf("zebra-crossing", "Cross the road", "Waits for the lights.")}); err != nil {
		t.Fatal(err)
	}
	if !svc.search.invalid.Load() {
		t.Error("a save did not invalidate the search index")
	}
	if got := resultNames(find(t, svc, "zebra", true, 0)); !slices.Equal(got, []string{"workflow:zebra-crossing"}) {
		t.Fatalf("zebra after saving it: %v", got)
	}
}
