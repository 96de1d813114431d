//go:build unix

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrape is one /metrics answer, parsed by the Prometheus text parser.
type scrape map[string]*dto.MetricFamily

// value is the sample of family whose labels include all of want: a
// counter's or gauge's value, a histogram's count (0 when there is none).
func (s scrape) value(family string, want map[string]string) float64 {
	f := s[family]
	if f == nil {
		return 0
	}
	var sum float64
next:
	for _, m := range f.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if have[k] != v {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			sum += m.Counter.GetValue()
		case m.Gauge != nil:
			sum += m.Gauge.GetValue()
		case m.Histogram != nil:
			sum += float64(m.Histogram.GetSampleCount())
		}
	}
	return sum
}

func getMetrics(t *testing.T, base, token string) scrape {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %d", res.StatusCode)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(res.Body)
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	return scrape(fams)
}

// scrapeUntil scrapes until done holds of a scrape (the last one is
// returned either way after 30 s: the assertions that follow fail on it).
func scrapeUntil(t *testing.T, base, token string, done func(scrape) bool) scrape {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		s := getMetrics(t, base, token)
		if done(s) || time.Now().After(deadline) {
			return s
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// `serve --http` serves /metrics behind its bearer tokens, in the
// Prometheus text format, with values that move as a run runs: a run that
// pauses on a question raises the open pauses and counts a waiting run;
// its answer brings the pauses back down and counts the run succeeded, its
// steps, their durations and the store's commits. /readyz names its
// checks, and --log-format json writes one JSON object a line.
func TestServeMetrics(t *testing.T) {
	const token = "metrics-test-token-0123456789"
	logFile := filepath.Join(t.TempDir(), "serve.log")
	url := startedHTTP(t, "--http", "127.0.0.1:0", "--auth-token", token, "--log-format", "json", "--log-file", logFile)
	base := strings.TrimSuffix(url, "/mcp")

	// Without the token: refused.
	res, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("/metrics without a token: %d", res.StatusCode)
	}
	req, _ := http.NewRequest(http.MethodGet, base+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer wrong-token-of-some-length")
	if res, err = http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("/metrics with a wrong token: %d", res.StatusCode)
	}

	// /readyz needs no token and names its checks.
	res, err = http.Get(base + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	body := new(strings.Builder)
	_, _ = bufio.NewReader(res.Body).WriteTo(body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || body.String() != "serving ok\nservice ok\nstore ok\n" {
		t.Fatalf("/readyz: %d %q", res.StatusCode, body)
	}

	before := getMetrics(t, base, token)
	for _, f := range []string{"stepwise_open_pauses", "stepwise_runs_waiting_to_be_driven", "stepwise_commit_duration_seconds"} {
		if before[f] == nil {
			t.Fatalf("no %s before any run: %v", f, before)
		}
	}
	if v := before.value("stepwise_open_pauses", nil); v != 0 {
		t.Fatalf("open pauses before any run: %v", v)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "metrics-test", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer{token: token, base: http.DefaultTransport}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	def := "version: 1\nname: metered\nsteps:\n  - id: who\n    ask: {prompt: \"Who?\", type: string}\n  - id: greet\n    uses: log\n    with: {message: \"hi ${{ steps.who.answer }}\"}\noutputs:\n  who: ${{ steps.who.answer }}\n"
	run, isErr := callTool(t, cs, "run_start", map[string]any{"definition": def}, nil)
	if isErr || run.Status != "waiting" || run.Pause == nil {
		t.Fatalf("run_start: %+v", run)
	}

	// The bus reaches the metrics after the commit a tool's answer waited
	// for: a scrape right after it may come first.
	paused := scrapeUntil(t, base, token, func(s scrape) bool {
		return s.value("stepwise_runs_total", map[string]string{"status": "waiting"}) >= 1 &&
			s.value("stepwise_http_requests_total", map[string]string{"route": "/readyz"}) >= 1
	})
	if v := paused.value("stepwise_open_pauses", nil); v != 1 {
		t.Fatalf("open pauses while the run waits: %v", v)
	}
	if v := paused.value("stepwise_runs_total", map[string]string{"workflow": "metered", "status": "waiting"}); v != 1 {
		t.Fatalf("runs waiting: %v", v)
	}
	if v := paused.value("stepwise_mcp_requests_total", map[string]string{"method": "tools/call", "outcome": "ok"}); v < 1 {
		t.Fatalf("tools/call counted: %v", v)
	}
	if v := paused.value("stepwise_http_requests_total", map[string]string{"route": "/mcp"}); v < 1 {
		t.Fatalf("/mcp requests counted: %v", v)
	}
	if v := paused.value("stepwise_http_requests_total", map[string]string{"route": "/readyz", "code": "200"}); v != 1 {
		t.Fatalf("/readyz requests counted: %v", v)
	}

	done, isErr := callTool(t, cs, "run_continue", map[string]any{"token": run.Pause.Token, "value": "Ada"}, nil)
	if isErr || done.Status != "succeeded" {
		t.Fatalf("run_continue: %+v", done)
	}
	after := scrapeUntil(t, base, token, func(s scrape) bool {
		return s.value("stepwise_runs_total", map[string]string{"status": "succeeded"}) >= 1
	})
	if v := after.value("stepwise_open_pauses", nil); v != 0 {
		t.Fatalf("open pauses after the answer: %v", v)
	}
	if v := after.value("stepwise_runs_total", map[string]string{"workflow": "metered", "status": "succeeded"}); v != 1 {
		t.Fatalf("runs succeeded: %v", v)
	}
	if v := after.value("stepwise_run_duration_seconds", map[string]string{"workflow": "metered"}); v != 1 {
		t.Fatalf("run durations observed: %v", v)
	}
	if v := after.value("stepwise_steps_total", map[string]string{"kind": "ask", "outcome": "succeeded"}); v != 1 {
		t.Fatalf("ask steps succeeded: %v (%v)", v, after["stepwise_steps_total"])
	}
	if v := after.value("stepwise_steps_total", map[string]string{"outcome": "succeeded"}); v != 2 {
		t.Fatalf("steps succeeded: %v (%v)", v, after["stepwise_steps_total"])
	}
	if v := after.value("stepwise_step_duration_seconds", map[string]string{"kind": "ask"}); v != 1 {
		t.Fatalf("ask step durations observed: %v", v)
	}
	if b, a := before.value("stepwise_commit_duration_seconds", nil), after.value("stepwise_commit_duration_seconds", nil); a <= b {
		t.Fatalf("commits observed: %v before, %v after", b, a)
	}
	if v := after.value("stepwise_mcp_requests_total", map[string]string{"method": "tools/call"}); v < 2 {
		t.Fatalf("tools/call counted after the answer: %v", v)
	}

	// --log-format json: every line of the log is a JSON object with a
	// level and a message.
	b, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) == 0 || lines[0] == "" {
		t.Fatal("nothing logged")
	}
	output := false
	for _, l := range lines {
		var rec struct {
			Level, Msg, Text string
		}
		if err := json.Unmarshal([]byte(l), &rec); err != nil || rec.Level == "" || rec.Msg == "" {
			t.Fatalf("not a JSON log line: %q (%v)", l, err)
		}
		output = output || rec.Msg == "action output" && rec.Text == "hi Ada"
	}
	if !output {
		t.Fatalf("the log action's line is not a record of the log:\n%s", b)
	}
}

// An unknown --log-format is a usage error before anything is served.
func TestServeLogFormatRefused(t *testing.T) {
	refusedAtStart(t, "--log-format", "--http", "127.0.0.1:0", "--log-format", "xml")
}
