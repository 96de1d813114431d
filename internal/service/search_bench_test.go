package service

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// Word lists for generated libraries: verb-object-system names give
// 32 × 30 × 20 distinct workflows, described the way operators write.
var (
	benchVerbs = strings.Fields("deploy rollback backup restore rotate provision decommission migrate audit sync scale patch upgrade validate archive purge " +
		"reindex snapshot verify onboard offboard notify triage renew import export publish build test release monitor clean")
	benchObjects = strings.Fields("database cluster certificate secrets logs cache queue bucket dns-records user-accounts api frontend invoices payments reports " +
		"search-index kafka-topics vm container-images feature-flags dashboards alerts backups firewall-rules tls-keys ldap-groups tickets schemas metrics pipelines")
	benchSystems = strings.Fields("postgres mysql redis kubernetes aws gcp azure s3 github jira slack stripe elasticsearch terraform vault nginx grafana prometheus salesforce snowflake")
	benchEnvs    = strings.Fields("production staging development eu-west us-east")
	benchThen    = []string{"posts a summary to Slack", "waits for an approval from the on-call engineer", "records the result in the audit log",
		"retries transient failures with backoff", "opens a ticket when a check fails", "compares the result with the previous run"}
	benchCategories = strings.Fields("ops security data release compliance finance support infra")
	benchInputs     = []string{
		"  environment: {type: string, enum: [production, staging, development], description: Where to run}\n",
		"  region: {type: string, default: eu-west-1, description: Cloud region}\n",
		"  dry_run: {type: boolean, default: true, description: Only show what would change}\n",
		"  ticket: {type: string, required: false, description: Change ticket to link}\n",
	}
)

// benchLibrary writes n generated workflows into a new home's library and
// opens a service on it; it returns the names written.
func benchLibrary(b *testing.B, n int) (*Service, string, []string) {
	b.Helper()
	home := b.TempDir()
	lib := filepath.Join(home, "workflows")
	if err := os.MkdirAll(lib, 0o755); err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	total := len(benchVerbs) * len(benchObjects) * len(benchSystems)
	var names []string
	for _, i := range rng.Perm(total)[:n] {
		verb := benchVerbs[i%len(benchVerbs)]
		object := benchObjects[i/len(benchVerbs)%len(benchObjects)]
		system := benchSystems[i/len(benchVerbs)/len(benchObjects)]
		name := verb + "-" + object + "-" + system
		names = append(names, name)
		env := benchEnvs[rng.IntN(len(benchEnvs))]
		title := fmt.Sprintf("%s %s on %s", strings.ToUpper(verb[:1])+verb[1:], strings.ReplaceAll(object, "-", " "), system)
		desc := fmt.Sprintf("%ss the %s of the %s %s environment, then %s.", strings.ToUpper(verb[:1])+verb[1:],
			strings.ReplaceAll(object, "-", " "), system, env, benchThen[rng.IntN(len(benchThen))])
		tags := []string{system, env, benchCategories[rng.IntN(len(benchCategories))]}
		var inputs strings.Builder
		for _, k := range rng.Perm(len(benchInputs))[:1+rng.IntN(3)] {
			inputs.WriteString(benchInputs[k])
		}
		def := fmt.Sprintf("version: 1\nname: %s\ntitle: %s\ndescription: %s\ntags: [%s]\ninputs:\n%ssteps:\n"+
			"  - id: announce\n    uses: log\n    with: {message: \"%s starting\"}\n"+
			"  - id: confirm\n    ask: {prompt: \"Go ahead with %s?\", type: boolean}\n"+
			"  - id: work\n    uses: noop\n",
			name, title, desc, strings.Join(tags, ", "), inputs.String(), name, name)
		if err := os.WriteFile(filepath.Join(lib, name+".yaml"), []byte(def), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	svc, err := Open(context.Background(), Options{Home: home, Durability: "normal"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = svc.Close(context.Background()) })
	return svc, lib, names
}

// BenchmarkActionSearch10k searches a library of 10,000 workflows with a
// mix of queries (names, words, phrases, typos, prefixes, misses) on a
// warm index and reports the latency per query (p50, p99), the cold build
// (first search: every file parsed) and the first search after a file was
// added. ns/op is one pass over the whole mix.
func BenchmarkActionSearch10k(b *testing.B) {
	svc, lib, names := benchLibrary(b, 10000)
	ctx := context.Background()
	search := func(q string) {
		if _, err := svc.SearchActions(ctx, q, true, 10); err != nil {
			b.Fatal(err)
		}
	}
	start := time.Now()
	search("deploy")
	cold := time.Since(start)
	if n := svc.search.lib.Load().index.Len(); n != len(names) {
		b.Fatalf("indexed %d workflows, want %d", n, len(names))
	}

	// The library was written just before: the first index is racy and
	// listed once more. Let it settle, then measure a change.
	time.Sleep(100 * time.Millisecond)
	search("settle")
	add := filepath.Join(lib, "zz-added.yaml")
	if err := os.WriteFile(add, []byte(wf("zz-added", "Added later", "Appears after a change.", "late")), 0o644); err != nil {
		b.Fatal(err)
	}
	start = time.Now()
	search("added later")
	change := time.Since(start)
	time.Sleep(100 * time.Millisecond)
	search("settle")

	queries := []string{
		names[0], names[4242], "deploy", "postgres", "certificate", "rollback kubernetes",
		"restore the database from backup", "rotate tls keys on vault", "notify slack when a release fails",
		"kuberntes", "certficate renewal", "databse restore", "prov", "elastic", "how do I clean up old logs in s3",
		"log", "transform", "zzzz nothing matches", "dns", "compliance audit production",
	}
	var lat []time.Duration
	for b.Loop() {
		for _, q := range queries {
			t := time.Now()
			search(q)
			lat = append(lat, time.Since(t))
		}
	}
	slices.Sort(lat)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(lat[len(lat)/2]), "p50-ms")
	b.ReportMetric(ms(lat[len(lat)*99/100]), "p99-ms")
	b.ReportMetric(ms(cold), "cold-build-ms")
	b.ReportMetric(ms(change), "after-change-ms")
}

// BenchmarkListWorkflows10k is a listing of 10,000 cached workflows (no
// file changed): what the search index would cost per query if it were
// rebuilt from ListWorkflows every time.
func BenchmarkListWorkflows10k(b *testing.B) {
	svc, _, names := benchLibrary(b, 10000)
	ctx := context.Background()
	if ws, err := svc.ListWorkflows(ctx, ""); err != nil || len(ws) != len(names) {
		b.Fatalf("listed %d workflows, %v", len(ws), err)
	}
	for b.Loop() {
		if _, err := svc.ListWorkflows(ctx, ""); err != nil {
			b.Fatal(err)
		}
	}
}
