package search

import (
	"fmt"
	"testing"
)

// benchDocs makes n documents whose words repeat as a real library's do:
// a few hundred distinct words, each in many documents.
func benchDocs(n int) []Document {
	verbs := []string{"deploy", "backup", "restore", "rotate", "provision", "migrate", "audit", "sync", "scale", "patch", "archive", "notify"}
	things := []string{"database", "cluster", "certificates", "logs", "cache", "queue", "bucket", "api", "invoices", "dashboards", "alerts", "secrets"}
	places := []string{"postgres", "redis", "kubernetes", "aws", "s3", "github", "slack", "vault", "grafana", "snowflake"}
	docs := make([]Document, n)
	for i := range docs {
		v, t, p := verbs[i%len(verbs)], things[i/len(verbs)%len(things)], places[i/len(verbs)/len(things)%len(places)]
		docs[i] = Document{Kind: "workflow", Name: fmt.Sprintf("%s-%s-%s-%d", v, t, p, i),
			Title:       fmt.Sprintf("%s %s on %s", v, t, p),
			Description: fmt.Sprintf("Runs %s for the %s of %s number %d, then posts a summary and records the result.", v, t, p, i),
			Tags:        []string{p, "ops"}}
	}
	return docs
}

func BenchmarkBuild10k(b *testing.B) {
	docs := benchDocs(10000)
	for b.Loop() {
		New(docs)
	}
}

// BenchmarkSearch10k is one pass over a mix of queries, the index alone
// (the service benchmark adds freshness checks and results).
func BenchmarkSearch10k(b *testing.B) {
	ix := New(benchDocs(10000))
	var queries []Query
	for _, q := range []string{"deploy", "restore database", "rotate certificates on kubernetes", "kuberntes", "prov", "ops", "zzz"} {
		queries = append(queries, Parse(q))
	}
	for b.Loop() {
		for _, q := range queries {
			ix.Search(q, 10)
		}
	}
}
