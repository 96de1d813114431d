package api

import (
	"net/http"
	"testing"

	"stepwise.dev/stepwise/code"
)

// BenchmarkStartRun: POST /api/runs of a library workflow of one step,
// answered once it succeeded (HTTP over loopback, SQLite at durability
// normal).
func BenchmarkStartRun(b *testing.B) {
	f := newFixture(b)
	body := StartRequest{Workflow: "quick", Inputs: map[string]any{"n": 1}}
	b.ReportAllocs()
	for b.Loop() {
		if r := f.do(http.MethodPost, "/api/runs", body).run(b, http.StatusCreated); r.Status != code.StatusSucceeded {
			b.Fatalf("status %s", r.Status)
		}
	}
}

// BenchmarkGetRun: GET /api/runs/{run_id} of a waiting run (its pause's
// token signed).
func BenchmarkGetRun(b *testing.B) {
	f := newFixture(b)
	run := f.do(http.MethodPost, "/api/runs", StartRequest{Workflow: "greet"}).run(b, http.StatusCreated)
	b.ReportAllocs()
	for b.Loop() {
		if r := f.do(http.MethodGet, "/api/runs/"+run.RunID, nil).run(b, http.StatusOK); r.Pause == nil {
			b.Fatal("no pause")
		}
	}
}
