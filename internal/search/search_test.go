package search

import (
	"slices"
	"testing"
)

func sampleDocs() []Document {
	return []Document{
		{Kind: "action", Name: "log", Description: "Write a message to the run's log."},
		{Kind: "action", Name: "transform", Description: "Compute a value with templates."},
		{Kind: "workflow", Name: "backup-database", Title: "Back up a database", Description: "Dumps a Postgres database to object storage.", Tags: []string{"backup", "postgres"}},
		{Kind: "workflow", Name: "restore-database", Title: "Restore a database", Description: "Restores the latest backup of a Postgres database.", Tags: []string{"postgres"}},
		{Kind: "workflow", Name: "rotate-logs", Title: "Rotate logs", Description: "Compresses and rotates application logs.", Tags: []string{"maintenance"}},
		{Kind: "workflow", Name: "deploy-api", Title: "Deploy the API", Description: "Builds and ships the API service to Kubernetes.", Tags: []string{"deploy", "kubernetes"}},
		{Kind: "workflow", Name: "provision-server", Title: "Provision a server", Description: "Creates a virtual machine and installs the monitoring agent.", Tags: []string{"infrastructure"}},
		{Kind: "workflow", Name: "audit-access", Title: "Audit access", Description: "Reviews who may deploy to production and logs the findings.", Tags: []string{"security", "compliance"}},
	}
}

// names runs a query and returns the names of the hits in order.
func names(ix *Index, query string, limit int) []string {
	var out []string
	for _, h := range ix.Search(Parse(query), limit) {
		out = append(out, h.Name)
	}
	return out
}

func TestExactNameBeatsMentions(t *testing.T) {
	t.Parallel()
	ix := New(sampleDocs())
	got := names(ix, "log", 0)
	if len(got) == 0 || got[0] != "log" {
		t.Fatalf("log: %v, want the action log first", got)
	}
	// rotate-logs names logs (name weight), audit-access only mentions
	// them: the name wins.
	if i, j := slices.Index(got, "rotate-logs"), slices.Index(got, "audit-access"); i < 0 || j < 0 || i > j {
		t.Errorf("log: %v, want rotate-logs before audit-access", got)
	}
}

func TestNamePrefixIsBoosted(t *testing.T) {
	t.Parallel()
	ix := New(sampleDocs())
	if got := names(ix, "backup", 0); len(got) < 2 || got[0] != "backup-database" {
		t.Errorf("backup: %v, want backup-database (name starts with it) before restore-database (mentions it)", got)
	}
	if got := names(ix, "prov", 1); !slices.Equal(got, []string{"provision-server"}) {
		t.Errorf("prov: %v", got)
	}
}

func TestTagsMatch(t *testing.T) {
	t.Parallel()
	ix := New(sampleDocs())
	got := names(ix, "compliance", 0)
	if !slices.Equal(got, []string{"audit-access"}) {
		t.Errorf("compliance: %v, want audit-access (tag only)", got)
	}
	// A tag outranks the description: both restore and backup are tagged
	// postgres, and only descriptions mention it besides.
	ix = New([]Document{
		{Kind: "workflow", Name: "a", Description: "talks about kubernetes"},
		{Kind: "workflow", Name: "b", Tags: []string{"kubernetes"}},
	})
	if got := names(ix, "kubernetes", 0); !slices.Equal(got, []string{"b", "a"}) {
		t.Errorf("kubernetes: %v, want the tagged one first", got)
	}
}

func TestFieldOrder(t *testing.T) {
	t.Parallel()
	ix := New([]Document{
		{Kind: "workflow", Name: "d", Description: "widget"},
		{Kind: "workflow", Name: "c", Tags: []string{"widget"}},
		{Kind: "workflow", Name: "b", Title: "Widget"},
		{Kind: "workflow", Name: "widget-a"},
	})
	if got := names(ix, "widget", 0); !slices.Equal(got, []string{"widget-a", "b", "c", "d"}) {
		t.Errorf("widget: %v, want name > title > tags > description", got)
	}
}

func TestMultiTermPrefersDocumentsMatchingAll(t *testing.T) {
	t.Parallel()
	ix := New(sampleDocs())
	got := names(ix, "restore postgres backup", 0)
	if len(got) < 2 || got[0] != "restore-database" {
		t.Fatalf("restore postgres backup: %v, want restore-database (all three) first", got)
	}
	// Two description words together beat one name word alone.
	ix = New([]Document{
		{Kind: "workflow", Name: "deploy-api"},
		{Kind: "workflow", Name: "z", Description: "deploy the database"},
	})
	if got := names(ix, "deploy database", 0); !slices.Equal(got, []string{"z", "deploy-api"}) {
		t.Errorf("deploy database: %v, want the document matching both first", got)
	}
}

func TestTypoTolerance(t *testing.T) {
	t.Parallel()
	ix := New(sampleDocs())
	if got := names(ix, "databse", 0); len(got) < 2 || !slices.Contains(got[:2], "backup-database") || !slices.Contains(got[:2], "restore-database") {
		t.Errorf("databse: %v, want the database workflows", got)
	}
	if got := names(ix, "provison", 1); !slices.Equal(got, []string{"provision-server"}) {
		t.Errorf("provison: %v", got)
	}
	// Short terms get no typo tolerance: "lag" is not "log".
	if got := names(ix, "lag", 0); len(got) != 0 {
		t.Errorf("lag: %v, want nothing", got)
	}
	// A typo earns less than the word itself.
	typo := ix.Search(Parse("databse"), 1)[0].Score
	exact := ix.Search(Parse("database"), 1)[0].Score
	if typo >= exact {
		t.Errorf("typo scored %v, exact %v", typo, exact)
	}
}

func TestOtherWordForms(t *testing.T) {
	t.Parallel()
	ix := New(sampleDocs())
	if got := names(ix, "deployment", 1); !slices.Equal(got, []string{"deploy-api"}) {
		t.Errorf("deployment: %v, want deploy-api", got)
	}
	if got := names(ix, "audited", 1); !slices.Equal(got, []string{"audit-access"}) {
		t.Errorf("audited: %v, want audit-access", got)
	}
	// Short tokens do not count as forms: "login" is not about logs.
	if got := names(New([]Document{{Kind: "action", Name: "log"}}), "login", 0); len(got) != 0 {
		t.Errorf("login: %v, want nothing", got)
	}
}

func TestTiesGoToTheName(t *testing.T) {
	t.Parallel()
	ix := New([]Document{
		{Kind: "workflow", Name: "zeta", Description: "same words"},
		{Kind: "workflow", Name: "alpha", Description: "same words"},
		{Kind: "action", Name: "mid", Description: "same words"},
	})
	if got := names(ix, "words", 0); !slices.Equal(got, []string{"alpha", "mid", "zeta"}) {
		t.Errorf("words: %v", got)
	}
}

func TestLimitAndEmptyQuery(t *testing.T) {
	t.Parallel()
	ix := New(sampleDocs())
	if got := names(ix, "database", 1); len(got) != 1 {
		t.Errorf("limit 1: %v", got)
	}
	got := names(ix, "  ", 3)
	if !slices.Equal(got, []string{"audit-access", "backup-database", "deploy-api"}) {
		t.Errorf("empty query: %v, want the first three by name", got)
	}
	for _, h := range ix.Search(Parse(""), 0) {
		if h.Score != 0 {
			t.Errorf("empty query scored %v", h)
		}
	}
	if got := names(ix, "nothing-like-this", 0); len(got) != 0 {
		t.Errorf("no match: %v", got)
	}
}

func TestMergeRanksAcrossIndexes(t *testing.T) {
	t.Parallel()
	docs := sampleDocs()
	actions, workflows := New(docs[:2]), New(docs[2:])
	q := Parse("log")
	merged := Merge(3, actions.Search(q, 3), workflows.Search(q, 3))
	one := New(docs).Search(q, 3)
	if len(merged) != len(one) {
		t.Fatalf("merged %v, one index %v", merged, one)
	}
	for i := range merged {
		if merged[i].Name != one[i].Name || merged[i].Score != one[i].Score {
			t.Errorf("merged %v, one index %v", merged, one)
		}
	}
}
