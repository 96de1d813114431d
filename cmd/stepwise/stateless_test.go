//go:build unix

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// roundRobin is a load balancer with no affinity at all: each HTTP
// request goes to the next replica. It records which replica got each
// JSON-RPC method.
type roundRobin struct {
	mu      sync.Mutex
	next    int
	proxies []*httputil.ReverseProxy
	got     map[string][]int // method → replicas, in order
}

func newRoundRobin(t *testing.T, urls []string) *httptest.Server {
	rr := &roundRobin{got: map[string][]int{}}
	for _, u := range urls {
		target, err := url.Parse(u)
		if err != nil {
			t.Fatal(err)
		}
		p := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: target.Scheme, Host: target.Host})
		p.FlushInterval = -1 // server-sent events as they come
		rr.proxies = append(rr.proxies, p)
	}
	srv := httptest.NewServer(rr)
	t.Cleanup(srv.Close)
	t.Cleanup(func() { t.Logf("methods by replica: %v", rr.snapshot()) })
	return srv
}

func (rr *roundRobin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	var msg struct {
		Method string `json:"method"`
	}
	_ = json.Unmarshal(body, &msg)
	rr.mu.Lock()
	i := rr.next % len(rr.proxies)
	rr.next++
	rr.got[msg.Method] = append(rr.got[msg.Method], i)
	rr.mu.Unlock()
	r.URL.Path = "/mcp"
	rr.proxies[i].ServeHTTP(w, r)
}

func (rr *roundRobin) snapshot() map[string][]int {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	out := map[string][]int{}
	for k, v := range rr.got {
		out[k] = append([]int(nil), v...)
	}
	return out
}

// TestStatelessBehindAnyReplica: two `serve --http` replicas on one
// PostgreSQL database behind a balancer with no affinity. A go-sdk client
// on protocol 2026-07-28 runs a workflow whose question it answers
// through MRTR — the call that asks and the retried call that answers
// land on different replicas, which share the key that signs the
// request state — and listens (subscriptions/listen) to a run on one
// replica while the other drives it.
func TestStatelessBehindAnyReplica(t *testing.T) {
	rs := startReplicas(t, 2)
	if r, isErr := callTool(t, rs.sessions[0], "workflow_save", map[string]any{"content": replicaWorkflow}, nil); isErr || !r.Valid {
		t.Fatalf("workflow_save: %+v", r)
	}
	lb := newRoundRobin(t, rs.urls)

	var mu sync.Mutex
	var asked []string
	updated := make(chan string, 64)
	client := mcp.NewClient(&mcp.Implementation{Name: "stateless", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			mu.Lock()
			asked = append(asked, req.Params.Message)
			mu.Unlock()
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"value": "Hi"}}, nil
		},
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) { updated <- r.Params.URI },
	})
	acked := make(chan struct{}, 4)
	client.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "notifications/subscriptions/acknowledged" {
				acked <- struct{}{}
			}
			return next(ctx, method, req)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: lb.URL}, &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	// A question answered through MRTR, across replicas.
	r, isErr := callTool(t, cs, "run_start", map[string]any{"workflow": "hello", "inputs": map[string]any{"who": "world"}}, nil)
	if isErr || r.Status != "succeeded" || r.Outputs["said"] != "Hi world" {
		t.Fatalf("run_start through the balancer: %+v", r)
	}
	mu.Lock()
	if len(asked) != 1 || !strings.Contains(asked[0], "Greeting?") {
		t.Errorf("asked %q, want the question once", asked)
	}
	mu.Unlock()
	calls := lb.Config.Handler.(*roundRobin).snapshot()["tools/call"]
	if len(calls) < 2 || calls[len(calls)-1] == calls[len(calls)-2] {
		t.Errorf("the asking call and its retry went to replicas %v: want two different ones", calls)
	}

	// A run paused through replica 1; the client listens through the
	// balancer; replica 2 is answered and drives it.
	paused, isErr := callTool(t, rs.sessions[0], "run_start", map[string]any{"workflow": "hello", "inputs": map[string]any{"who": "you"}}, nil)
	if isErr || paused.Pause == nil {
		t.Fatalf("run_start through replica 1: %+v", paused)
	}
	uri := "stepwise://runs/" + paused.RunID
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
		t.Fatal(err)
	}
	// The client's Subscribe returns before the replica has taken the
	// listen; it has once it acknowledges.
	select {
	case <-acked:
	case <-time.After(15 * time.Second):
		t.Fatal("subscriptions/listen was not acknowledged")
	}
	done, isErr := callTool(t, rs.sessions[1], "run_continue", map[string]any{"token": paused.Pause.Token, "value": "Bye"}, nil)
	if isErr || done.Status != "succeeded" {
		t.Fatalf("run_continue through replica 2: %+v", done)
	}
	select {
	case got := <-updated:
		if got != uri {
			t.Errorf("updated %q, want %q", got, uri)
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("no resources/updated for %s through the balancer; methods by replica: %v", uri, lb.Config.Handler.(*roundRobin).snapshot())
	}
}
