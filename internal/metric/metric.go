// Package metric keeps stepwise's Prometheus metrics on a registry of its
// own: what the engine publishes on its bus (runs and steps, their
// durations), the store's commit latency as the engine observes it, gauges
// counted by the store at scrape time, and the MCP and HTTP requests the
// surfaces serve. Surfaces mount Handler and wrap their handlers; they
// compute nothing.
package metric

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"stepwise.dev/stepwise/internal/engine"
	"stepwise.dev/stepwise/internal/store"
)

// Bounds of what the metrics keep and label.
const (
	// MaxWorkflowLabels is how many distinct workflow names label the run
	// families; later names are counted as "other".
	MaxWorkflowLabels = 500
	// maxTracked bounds the runs whose start (and steps' starts) are kept
	// to compute durations; a run beyond it is looked up when it ends.
	maxTracked = 100_000
	// gaugeLimit is where the store's counts stop.
	gaugeLimit = 1_000_000
)

// Metrics are stepwise's metrics and the registry that serves them.
type Metrics struct {
	reg       *prometheus.Registry
	runs      *prometheus.CounterVec
	steps     *prometheus.CounterVec
	stepDur   *prometheus.HistogramVec
	runDur    *prometheus.HistogramVec
	commitDur prometheus.Histogram
	mcpReqs   *prometheus.CounterVec
	mcpDur    *prometheus.HistogramVec
	httpReqs  *prometheus.CounterVec
	httpDur   *prometheus.HistogramVec

	mu        sync.Mutex
	tracked   map[string]*runInfo // by run id
	workflows map[string]struct{} // the workflow label values given out
}

type runInfo struct {
	workflow string
	created  time.Time
	steps    map[string]stepStart // by step id
}

type stepStart struct {
	kind string
	at   time.Time
}

// New returns the metrics, registered on a new registry with the Go
// runtime's and the process's collectors.
func New() *Metrics {
	durations := []float64{.001, .005, .01, .05, .1, .5, 1, 5, 10, 60, 300, 3600}
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "stepwise_runs_total",
			Help: "Runs of this process that reached a status (succeeded, failed, canceled, waiting), each time they reached it."}, []string{"workflow", "status"}),
		steps: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "stepwise_steps_total",
			Help: "Steps this process recorded, by kind and outcome (succeeded, failed, skipped)."}, []string{"kind", "outcome"}),
		stepDur: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "stepwise_step_duration_seconds",
			Help: "Time from a step's start to its outcome (a question's includes the wait for its answer).", Buckets: durations}, []string{"kind"}),
		runDur: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "stepwise_run_duration_seconds",
			Help: "Time from a run's creation to its end (succeeded, failed or canceled).", Buckets: durations}, []string{"workflow"}),
		commitDur: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "stepwise_commit_duration_seconds",
			Help:    "Time the store took to commit a step's results (one transaction).",
			Buckets: []float64{.0001, .0005, .001, .002, .005, .01, .025, .05, .1, .25, 1}}),
		mcpReqs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "stepwise_mcp_requests_total",
			Help: "MCP requests received, by method (unknown ones as other) and outcome (ok, error, tool_error)."}, []string{"method", "outcome"}),
		mcpDur: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "stepwise_mcp_request_duration_seconds",
			Help: "Time to answer an MCP request, by method.", Buckets: prometheus.DefBuckets}, []string{"method"}),
		httpReqs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "stepwise_http_requests_total",
			Help: "HTTP requests served, by route and status code."}, []string{"route", "code"}),
		httpDur: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "stepwise_http_request_duration_seconds",
			Help: "Time to serve an HTTP request (a stream's whole life), by route.", Buckets: prometheus.DefBuckets}, []string{"route"}),
		tracked:   map[string]*runInfo{},
		workflows: map[string]struct{}{},
	}
	m.reg.MustRegister(m.runs, m.steps, m.stepDur, m.runDur, m.commitDur, m.mcpReqs, m.mcpDur, m.httpReqs, m.httpDur,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Registry is the registry the metrics are on (for tests and for a
// caller's own collectors).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the registry in the Prometheus text format (or
// OpenMetrics, as the scraper asks).
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// ObserveCommit records one commit's latency (engine.Config.CommitObserver).
func (m *Metrics) ObserveCommit(d time.Duration) { m.commitDur.Observe(d.Seconds()) }

// CountFromStore adds the gauges stepwise_open_pauses and
// stepwise_runs_waiting_to_be_driven, read from st at each scrape with
// bounded queries (at most a million each; a scrape whose read fails or
// takes over 2 s leaves them out). A store without counts adds nothing.
func (m *Metrics) CountFromStore(st store.Store, now func() time.Time) {
	gr, ok := st.(store.GaugeReader)
	if !ok {
		return
	}
	m.reg.MustRegister(&storeGauges{st: gr, now: now,
		pauses:  prometheus.NewDesc("stepwise_open_pauses", "Pauses waiting for an answer (read from the store at scrape time).", nil, nil),
		waiting: prometheus.NewDesc("stepwise_runs_waiting_to_be_driven", "Runs pending or running that no process drives: no lease or an expired one (read from the store at scrape time).", nil, nil)})
}

type storeGauges struct {
	st              store.GaugeReader
	now             func() time.Time
	pauses, waiting *prometheus.Desc
}

func (g *storeGauges) Describe(ch chan<- *prometheus.Desc) { ch <- g.pauses; ch <- g.waiting }

func (g *storeGauges) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	n, err := g.st.Gauges(ctx, g.now(), gaugeLimit)
	if err != nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(g.pauses, prometheus.GaugeValue, float64(n.OpenPauses))
	ch <- prometheus.MustNewConstMetric(g.waiting, prometheus.GaugeValue, float64(n.RunsWaitingToBeDriven))
}

// Watch counts the events of the runs eng drives in this process (not
// those other replicas drive: each process counts its own, and a scraper
// sums them) until ctx ends. lookup tells a run's workflow and creation
// time when its run.created was not seen (a run resumed here); nil leaves
// such runs' workflow "unknown" and their duration out.
func (m *Metrics) Watch(ctx context.Context, eng *engine.Engine, lookup func(ctx context.Context, runID string) (string, time.Time, error)) {
	events, stop := eng.SubscribeWanting(4096, func(string) bool { return false })
	go func() {
		defer stop()
		engine.Consume(ctx, events, func(ev engine.Event) { m.event(ctx, ev, lookup) })
	}()
}

// event updates the metrics for one event.
func (m *Metrics) event(ctx context.Context, ev engine.Event, lookup func(context.Context, string) (string, time.Time, error)) {
	switch ev.Type {
	case engine.EventRunCreated:
		var d struct {
			Workflow string `json:"workflow"`
		}
		_ = json.Unmarshal(ev.Data, &d)
		m.mu.Lock()
		if len(m.tracked) < maxTracked {
			m.tracked[ev.RunID] = &runInfo{workflow: m.workflowLabel(d.Workflow), created: ev.At, steps: map[string]stepStart{}}
		}
		m.mu.Unlock()
	case engine.EventStepStarted:
		var d struct {
			Kind string `json:"kind"`
		}
		if len(ev.Data) > 0 { // the step.started published before its commit has none
			_ = json.Unmarshal(ev.Data, &d)
		}
		m.mu.Lock()
		if ri := m.tracked[ev.RunID]; ri != nil {
			s, seen := ri.steps[ev.StepID]
			if !seen {
				s.at = ev.At
			}
			if d.Kind != "" {
				s.kind = d.Kind
			}
			ri.steps[ev.StepID] = s
		}
		m.mu.Unlock()
	case engine.EventStepSucceeded, engine.EventStepFailed, engine.EventStepSkipped:
		outcome := strings.TrimPrefix(ev.Type, "step.")
		kind := "unknown"
		var took time.Duration
		m.mu.Lock()
		if ri := m.tracked[ev.RunID]; ri != nil {
			if s, ok := ri.steps[ev.StepID]; ok {
				delete(ri.steps, ev.StepID)
				if s.kind != "" {
					kind = s.kind
				}
				took = ev.At.Sub(s.at)
			}
		}
		m.mu.Unlock()
		m.steps.WithLabelValues(kind, outcome).Inc()
		if took > 0 {
			m.stepDur.WithLabelValues(kind).Observe(took.Seconds())
		}
	case engine.EventRunPaused:
		m.runs.WithLabelValues(m.workflowOf(ctx, ev.RunID, lookup, false).workflow, store.StatusWaiting).Inc()
	case engine.EventRunSucceeded, engine.EventRunFailed, engine.EventRunCanceled:
		ri := m.workflowOf(ctx, ev.RunID, lookup, true)
		m.runs.WithLabelValues(ri.workflow, strings.TrimPrefix(ev.Type, "run.")).Inc()
		if !ri.created.IsZero() && ev.At.After(ri.created) {
			m.runDur.WithLabelValues(ri.workflow).Observe(ev.At.Sub(ri.created).Seconds())
		}
	}
}

// workflowOf is what is known of a run, looked up when it was not seen
// created; ended forgets it.
func (m *Metrics) workflowOf(ctx context.Context, runID string, lookup func(context.Context, string) (string, time.Time, error), ended bool) runInfo {
	m.mu.Lock()
	ri := m.tracked[runID]
	if ri != nil && ended {
		delete(m.tracked, runID)
	}
	m.mu.Unlock()
	if ri != nil {
		return *ri
	}
	info := runInfo{workflow: "unknown"}
	if lookup != nil {
		lctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		wf, created, err := lookup(lctx, runID)
		cancel()
		if err == nil {
			m.mu.Lock()
			info = runInfo{workflow: m.workflowLabel(wf), created: created}
			m.mu.Unlock()
		}
	}
	return info
}

// workflowLabel is name, or "other" once MaxWorkflowLabels names were
// given out. Called with m.mu held.
func (m *Metrics) workflowLabel(name string) string {
	if name == "" {
		return "unknown"
	}
	if _, ok := m.workflows[name]; ok {
		return name
	}
	if len(m.workflows) >= MaxWorkflowLabels {
		return "other"
	}
	m.workflows[name] = struct{}{}
	return name
}

// mcpMethods are the methods labelled by name; any other is "other".
var mcpMethods = map[string]bool{
	"initialize": true, "ping": true, "notifications/initialized": true, "notifications/cancelled": true,
	"tools/list": true, "tools/call": true, "resources/list": true, "resources/read": true,
	"resources/templates/list": true, "resources/subscribe": true, "resources/unsubscribe": true,
	"prompts/list": true, "prompts/get": true, "completion/complete": true, "logging/setLevel": true,
	"notifications/roots/list_changed": true, "tasks/get": true, "tasks/update": true, "tasks/cancel": true,
	"tasks/list": true, "tasks/result": true, "subscriptions/listen": true, "server/discover": true,
}

// MCPMiddleware is a receiving middleware counting each request by method
// and outcome: ok, error (a JSON-RPC error) or tool_error (a tool result
// with isError).
func (m *Metrics) MCPMiddleware() mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			start := time.Now()
			res, err := next(ctx, method, req)
			label := method
			if !mcpMethods[label] {
				label = "other"
			}
			outcome := "ok"
			if err != nil {
				outcome = "error"
			} else if r, ok := res.(*mcp.CallToolResult); ok && r != nil && r.IsError {
				outcome = "tool_error"
			}
			m.mcpReqs.WithLabelValues(label, outcome).Inc()
			m.mcpDur.WithLabelValues(label).Observe(time.Since(start).Seconds())
			return res, err
		}
	}
}

// HTTP counts h's requests under route (a fixed name: the caller's
// pattern, never the request's path) by status code.
func (m *Metrics) HTTP(route string, h http.Handler) http.Handler {
	reqs, dur := m.httpReqs.MustCurryWith(prometheus.Labels{"route": route}), m.httpDur.MustCurryWith(prometheus.Labels{"route": route})
	return promhttp.InstrumentHandlerDuration(dur, promhttp.InstrumentHandlerCounter(reqs, h))
}
