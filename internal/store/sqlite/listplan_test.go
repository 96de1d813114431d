package sqlite

import (
	"strings"
	"testing"
)

// Listing runs of one status, newest first, reads them in index order:
// no sort of every run of that status.
func TestListByStatusUsesTheIndex(t *testing.T) {
	s := openTemp(t)
	rows, err := s.r.Query("EXPLAIN QUERY PLAN SELECT "+runColumns+" FROM runs WHERE status IN (?) ORDER BY created_at DESC, id DESC LIMIT ?", "failed", 50)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	text := strings.Join(plan, "\n")
	if !strings.Contains(text, "runs_status_created") || strings.Contains(text, "TEMP B-TREE") {
		t.Fatalf("plan:\n%s", text)
	}
}

// An admission's reads go through the concurrency index (one queue) or the
// status index (the queues with queued runs): none scans the runs.
func TestAdmissionUsesTheIndexes(t *testing.T) {
	s := openTemp(t)
	for q, index := range map[string]string{
		sqlQueues:      "runs_status_created",
		sqlQueueLimit:  "runs_concurrency",
		sqlQueueActive: "runs_concurrency",
		sqlQueueHead:   "runs_concurrency",
	} {
		n := strings.Count(q, "?")
		args := make([]any, n)
		for i := range args {
			args[i] = "x"
		}
		rows, err := s.r.Query("EXPLAIN QUERY PLAN "+q, args...)
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		text := strings.Join(plan, "\n")
		if !strings.Contains(text, index) || strings.Contains(text, "TEMP B-TREE FOR ORDER BY") {
			t.Errorf("%s\nplan:\n%s", q, text)
		}
	}
}
