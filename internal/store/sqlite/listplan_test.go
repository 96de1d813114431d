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
