package mcpserver

import (
	"context"
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"stepwise.dev/stepwise/docs"
	"stepwise.dev/stepwise/internal/service"
	"stepwise.dev/stepwise/internal/workflow"
)

// Resource URIs.
const (
	uriDocs      = "stepwise://docs/workflows"
	uriDocsFull  = "stepwise://docs/workflows/full"
	uriSchema    = "stepwise://schema/workflow"
	uriWorkflows = "stepwise://workflows"
	uriRunPrefix = "stepwise://runs/"
)

func (s *Server) addResources() {
	s.addResource(&mcp.Resource{URI: uriDocs, Name: "workflow-language", Title: "The stepwise workflow language: essentials",
		Description: "The workflow language (v1) in a few KB: read it before authoring a workflow; it points to the full reference.", MIMEType: "text/markdown"},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return textResource(uriDocs, "text/markdown", docs.WorkflowsEssentials), nil
		})
	s.addResource(&mcp.Resource{URI: uriDocsFull, Name: "workflow-language-full", Title: "The stepwise workflow language: reference",
		Description: "The full specification of the workflow language (v1, ~75 KB): every field, rule and runtime contract.", MIMEType: "text/markdown"},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return textResource(uriDocsFull, "text/markdown", docs.Workflows), nil
		})
	s.addResource(&mcp.Resource{URI: uriSchema, Name: "workflow-schema", Title: "JSON Schema of workflows",
		Description: "The JSON Schema every workflow must satisfy (structure; workflow_validate also checks references and semantics).", MIMEType: "application/schema+json"},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return textResource(uriSchema, "application/schema+json", string(workflow.Schema())), nil
		})
	s.addResource(&mcp.Resource{URI: uriWorkflows, Name: "workflows", Title: "The workflow library",
		Description: "Every library workflow with its summary (as workflow_list returns).", MIMEType: "application/json"},
		func(ctx context.Context, _ *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			ws, err := s.svc.ListWorkflows(ctx, "")
			if err != nil {
				return nil, err
			}
			return jsonResource(uriWorkflows, WorkflowListOut{Workflows: ws})
		})
	s.addResourceTemplate(&mcp.ResourceTemplate{URITemplate: "stepwise://workflows/{name}", Name: "workflow", Title: "A library workflow",
		Description: "A library workflow's file as written (YAML or JSON).", MIMEType: "application/yaml"},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			name := strings.TrimPrefix(req.Params.URI, uriWorkflows+"/")
			if n, err := url.PathUnescape(name); err == nil {
				name = n
			}
			d, err := s.svc.GetWorkflow(ctx, name)
			if err != nil {
				return nil, mcp.ResourceNotFoundError(req.Params.URI)
			}
			mime := "application/yaml"
			if strings.HasSuffix(d.Path, ".json") {
				mime = "application/json"
			}
			return textResource(req.Params.URI, mime, d.Content), nil
		})
	s.addResourceTemplate(&mcp.ResourceTemplate{URITemplate: "stepwise://runs/{run_id}", Name: "run", Title: "A run",
		Description: "A run's status, open pause, outputs, error and steps (run_get's result). Subscribe to be told of every change.", MIMEType: "application/json"},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			id, sub := runURI(req.Params.URI)
			if id == "" || sub != "" {
				return nil, mcp.ResourceNotFoundError(req.Params.URI)
			}
			v, err := s.svc.GetRun(ctx, id)
			if err != nil {
				return nil, mcp.ResourceNotFoundError(req.Params.URI)
			}
			return jsonResource(req.Params.URI, s.runResult(v, true))
		})
	s.addResourceTemplate(&mcp.ResourceTemplate{URITemplate: "stepwise://runs/{run_id}/history{?after}", Name: "run-history", Title: "A run's history",
		Description: "A run's events in order (step started/succeeded/failed, pauses, answers, …), secrets masked, a page at a time: next is the URI of the following page (?after= the last event's seq).", MIMEType: "application/json"},
		s.readHistory)
}

// A page of a run's history holds at most historyPage events and stops
// once it holds historyBytes of their data (but holds one event at least).
const (
	historyPage  = 500
	historyBytes = 128 << 10
)

// readHistory reads a page of stepwise://runs/{run_id}/history: the
// events after the seq of ?after=.
func (s *Server) readHistory(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri, query, _ := strings.Cut(req.Params.URI, "?")
	id, sub := runURI(uri)
	if id == "" || sub != "history" {
		return nil, mcp.ResourceNotFoundError(req.Params.URI)
	}
	var after int64
	if query != "" {
		q, err := url.ParseQuery(query)
		if err == nil && q.Get("after") != "" {
			after, err = strconv.ParseInt(q.Get("after"), 10, 64)
		}
		if err != nil || after < 0 {
			return nil, mcp.ResourceNotFoundError(req.Params.URI)
		}
	}
	evs, err := s.svc.Events(ctx, id, after, historyPage+1)
	if err != nil {
		return nil, mcp.ResourceNotFoundError(req.Params.URI)
	}
	out := make([]historyEvent, 0, min(len(evs), historyPage))
	size := 0
	for i, e := range evs {
		if i == historyPage || (i > 0 && size+len(e.Data) > historyBytes) {
			break
		}
		size += len(e.Data)
		h := historyEvent{Seq: e.Seq, Type: e.Type, StepID: e.StepID, At: e.At.Format("2006-01-02T15:04:05.000Z07:00")}
		if len(e.Data) > 0 {
			_ = json.Unmarshal(e.Data, &h.Data)
		}
		out = append(out, h)
	}
	page := map[string]any{"run_id": id, "events": out}
	if len(out) < len(evs) {
		page["next"] = uri + "?after=" + strconv.FormatInt(out[len(out)-1].Seq, 10)
	}
	return jsonResource(req.Params.URI, page)
}

type historyEvent struct {
	Seq    int64  `json:"seq"`
	Type   string `json:"type"`
	StepID string `json:"step_id,omitempty"`
	Data   any    `json:"data,omitempty"`
	At     string `json:"at"`
}

// runURI splits stepwise://runs/{id}[/{sub}].
func runURI(uri string) (id, sub string) {
	rest, ok := strings.CutPrefix(uri, uriRunPrefix)
	if !ok || rest == "" {
		return "", ""
	}
	id, sub, _ = strings.Cut(rest, "/")
	return id, sub
}

func textResource(uri, mime, text string) *mcp.ReadResourceResult {
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: mime, Text: text}}}
}

// jsonResource is v as a resource's JSON; an output with a smaller form
// (shrinker) takes it when the whole is over the ceiling.
func jsonResource(uri string, v any) (*mcp.ReadResourceResult, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, err
	}
	if sh, ok := v.(shrinker); ok && len(b) > maxResultBytes {
		if b, err = json.MarshalIndent(sh.shrink(), "", "  "); err != nil {
			return nil, err
		}
	}
	return textResource(uri, "application/json", string(b)), nil
}

// subscriptions counts subscribers per resource URI, so that engine events
// are turned into notifications only for resources someone watches.
type subscriptions struct {
	mu    sync.Mutex
	count map[string]int
}

func newSubscriptions() *subscriptions { return &subscriptions{count: map[string]int{}} }

func (s *Server) subscribe(_ context.Context, req *mcp.SubscribeRequest) error {
	s.subs.mu.Lock()
	defer s.subs.mu.Unlock()
	s.subs.count[req.Params.URI]++
	return nil
}

func (s *Server) unsubscribe(_ context.Context, req *mcp.UnsubscribeRequest) error {
	s.subs.mu.Lock()
	defer s.subs.mu.Unlock()
	if s.subs.count[req.Params.URI] > 1 {
		s.subs.count[req.Params.URI]--
	} else {
		delete(s.subs.count, req.Params.URI)
	}
	return nil
}

func (s *subscriptions) watched(uri string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.count[uri] > 0
}

// pumpEvents turns the engine's events into resources/updated
// notifications for subscribed run resources (and their parents').
func (s *Server) pumpEvents(ctx context.Context, events <-chan service.Event, stop func()) {
	defer stop()
	service.Consume(ctx, events, func(ev service.Event) { s.notifyRun(ctx, ev) })
}

func (s *Server) notifyRun(ctx context.Context, ev service.Event) {
	if ev.Seq == 0 {
		return // step.started is published before it is recorded
	}
	for _, uri := range []string{uriRunPrefix + ev.RunID, uriRunPrefix + ev.RunID + "/history"} {
		if s.subs.watched(uri) {
			_ = s.mcp.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: uri})
		}
	}
}
