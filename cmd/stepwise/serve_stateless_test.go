//go:build unix

package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// statelessResult is what the tests read of a stateless server's result.
type statelessResult struct {
	Status  string         `json:"status"`
	Outputs map[string]any `json:"outputs"`
	Pause   *struct {
		StepID string `json:"step_id"`
		Token  string `json:"token"`
	} `json:"pause"`
	State      string `json:"state"`
	StateBytes int    `json:"state_bytes"`
	ErrorCode  string `json:"error_code"`
	Context    struct {
		Argument string `json:"argument"`
	} `json:"context"`
}

func statelessCall(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (statelessResult, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var r statelessResult
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("%s: %s: %v", name, b, err)
	}
	return r, res.IsError
}

const statelessFlow = `version: 1
name: trip
steps:
  - {id: where, ask: {prompt: "Where to?", type: string}}
  - {id: nights, ask: {prompt: "How many nights in ${{ steps.where.answer }}?", type: number}}
  - {id: sum, uses: transform, with: {value: "${{ steps.where.answer }} x${{ steps.nights.answer }}"}}
  - {id: ok, ask: {prompt: "Book ${{ steps.sum.output }}?", type: boolean}}
outputs:
  trip: ${{ steps.sum.output }}
  booked: ${{ steps.ok.answer }}
`

// TestServeStatelessStateMovesBetweenProcesses: two `serve --stateless
// --http` processes that share only $STEPWISE_SECRET_KEY (each its own
// home) serve one run, call by call in turn, one client on the stateless
// protocol 2026-07-28 and one on the older one; a third process with
// another key refuses the state; storage tools answer NOT_STATELESS; no
// home has a database file after.
func TestServeStatelessStateMovesBetweenProcesses(t *testing.T) {
	bin := sharedBinary(t)
	t.Setenv("STEPWISE_DATABASE_URL", "")
	t.Setenv("STEPWISE_SECRET_KEY", strings.Repeat("5a", 32))
	homes := []string{t.TempDir(), t.TempDir()}
	var sessions []*mcp.ClientSession
	for i, h := range homes {
		u, _ := serveProc(t, bin, "--home", h, "serve", "--http", "127.0.0.1:0", "--stateless")
		opts := &mcp.ClientSessionOptions{}
		if i == 0 {
			opts.ProtocolVersion = "2026-07-28"
		}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "stateless-e2e", Version: "1"}, nil).
			Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: u}, opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cs.Close() })
		sessions = append(sessions, cs)
	}
	r, isErr := statelessCall(t, sessions[0], "run_start", map[string]any{"definition": statelessFlow})
	if isErr || r.Status != "waiting" || r.Pause == nil || r.State == "" || r.StateBytes != len(r.State) {
		t.Fatalf("run_start: %+v", r)
	}
	first := r
	for i, v := range []any{"Lisbon", 3, true} {
		cs := sessions[(i+1)%2]
		if r, isErr = statelessCall(t, cs, "run_continue", map[string]any{"state": r.State, "token": r.Pause.Token, "value": v}); isErr {
			t.Fatalf("answer %d (%v): %+v", i, v, r)
		}
	}
	if r.Status != "succeeded" || r.Outputs["trip"] != "Lisbon x3" || r.Outputs["booked"] != true {
		t.Fatalf("end: %+v", r)
	}
	// A retried call from an earlier state goes on from there (the client
	// holds the run): answering the first question again, differently.
	if r, isErr = statelessCall(t, sessions[1], "run_continue", map[string]any{"state": first.State, "token": first.Pause.Token, "value": "Porto"}); isErr || r.Pause == nil || r.Pause.StepID != "nights" {
		t.Fatalf("from the first state again: %+v", r)
	}
	if te, isErr := statelessCall(t, sessions[0], "run_get", map[string]any{"run_id": "x"}); !isErr || te.ErrorCode != "NOT_STATELESS" {
		t.Errorf("run_get: %+v", te)
	}
	// Another key: the state is refused.
	t.Setenv("STEPWISE_SECRET_KEY", strings.Repeat("a5", 32))
	u, _ := serveProc(t, bin, "--home", t.TempDir(), "serve", "--http", "127.0.0.1:0", "--stateless")
	other, err := mcp.NewClient(&mcp.Implementation{Name: "stateless-e2e", Version: "1"}, nil).
		Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: u}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if te, isErr := statelessCall(t, other, "run_continue", map[string]any{"state": r.State, "token": r.Pause.Token, "value": 2}); !isErr || te.ErrorCode != "STATE_INVALID" || te.Context.Argument != "state" {
		t.Errorf("another key: %+v", te)
	}
	for _, h := range homes {
		dbs, _ := filepath.Glob(filepath.Join(h, "*.db*"))
		if _, err := os.Stat(filepath.Join(h, "stepwise.db")); err == nil || len(dbs) > 0 {
			t.Errorf("home %s has a database: %v", h, dbs)
		}
	}
}
