package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"stepwise.dev/stepwise/internal/service"
)

// httpEnv serves an env over real HTTP; logs are kept to check for leaks.
func httpEnv(t *testing.T, h HTTPOptions) (*env, string, *syncBuffer) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	logs := &syncBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	e := newEnv(t, Options{BaseURL: base, Logger: logger, ProtocolLogger: logger}, service.Options{})
	ts := &httptest.Server{Listener: ln, Config: &http.Server{Handler: e.srv.HTTPHandler(h)}}
	ts.Start()
	t.Cleanup(ts.Close)
	return e, base, logs
}

type syncBuffer struct {
	mu sync.Mutex
	bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.Buffer.Write(p)
}

// String is what was written so far (the server may still be logging).
func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.Buffer.String()
}

func TestSecretThroughOneTimePage(t *testing.T) {
	const secretValue = "correct-horse-battery"
	for _, version := range protocols {
		t.Run(version, func(t *testing.T) {
			e, base, logs := httpEnv(t, HTTPOptions{})
			var pageURL string
			var posted sync.WaitGroup
			posted.Add(1)
			browser := func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				p := req.Params
				if p.Mode != "url" {
					// The label question that follows is a form.
					return accept(map[string]any{"value": "red"}), nil
				}
				pageURL = p.URL
				if !strings.HasPrefix(p.URL, base+"/secrets/") || p.ElicitationID == "" {
					t.Errorf("url elicitation %+v", p)
				}
				// The person opens the page and types the secret, after the
				// client said yes.
				go func() {
					defer posted.Done()
					resp, err := http.Get(p.URL)
					if err != nil {
						t.Error(err)
						return
					}
					page, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					if resp.StatusCode != 200 || !strings.Contains(string(page), "Vault password?") || !strings.Contains(string(page), `type="password"`) {
						t.Errorf("page %d: %s", resp.StatusCode, page)
					}
					// A post from another site is refused.
					r, _ := http.NewRequest("POST", p.URL, strings.NewReader(url.Values{"value": {"x"}}.Encode()))
					r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
					r.Header.Set("Origin", "https://evil.example")
					if resp, err := http.DefaultClient.Do(r); err != nil || resp.StatusCode != http.StatusForbidden {
						t.Errorf("cross-site post: %v %v", resp, err)
					}
					resp, err = http.PostForm(p.URL, url.Values{"value": {secretValue}})
					if err != nil {
						t.Error(err)
						return
					}
					page, _ = io.ReadAll(resp.Body)
					resp.Body.Close()
					if resp.StatusCode != 200 || !strings.Contains(string(page), "Received") {
						t.Errorf("post %d: %s", resp.StatusCode, page)
					}
				}()
				return &mcp.ElicitResult{Action: "accept"}, nil
			}
			caps := &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}}}
			c := mcp.NewClient(&mcp.Implementation{Name: "browser-test", Version: "1"}, &mcp.ClientOptions{ElicitationHandler: browser, Capabilities: caps})
			cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: base + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_start", Arguments: map[string]any{"workflow": "vault"}})
			if err != nil {
				t.Fatal(err)
			}
			posted.Wait()
			var run RunResult
			b, _ := json.Marshal(res.StructuredContent)
			_ = json.Unmarshal(b, &run)
			if run.Status != "succeeded" || run.Outputs["length"] != float64(len(secretValue)) || run.Outputs["label"] != "red" {
				t.Fatalf("run: %s", b)
			}
			// The link was for one use.
			if resp, err := http.Get(pageURL); err != nil || resp.StatusCode != http.StatusNotFound {
				t.Errorf("second visit: %v %v", resp, err)
			}
			// The secret is nowhere: tool results, run views, history, logs.
			got, _ := e.svc.GetRun(context.Background(), run.RunID)
			events, _ := e.svc.Events(context.Background(), run.RunID, 0, 0)
			hist, _ := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "stepwise://runs/" + run.RunID + "/history"})
			view, _ := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "stepwise://runs/" + run.RunID})
			for what, v := range map[string]any{"tool result": res, "view": got, "events": events, "history": hist, "resource": view, "logs": logs.String()} {
				text, _ := json.Marshal(v)
				if strings.Contains(string(text), secretValue) {
					t.Errorf("the secret appears in the %s", what)
				}
			}
			assertNotStored(t, e.svc, secretValue, "Vault password?")
		})
	}
}

// assertNotStored scans the database files for a value; control is a
// text that must be there (proof that the scan sees the records).
func assertNotStored(t *testing.T, svc *service.Service, value, control string) {
	t.Helper()
	var all []byte
	for _, name := range []string{svc.Home.DBPath(), svc.Home.DBPath() + "-wal"} {
		data, err := readFile(name)
		if err == nil {
			all = append(all, data...)
		}
	}
	if !bytes.Contains(all, []byte(control)) {
		t.Fatalf("the database scan does not see %q", control)
	}
	if bytes.Contains(all, []byte(value)) {
		t.Errorf("the database holds the secret in clear")
	}
}
