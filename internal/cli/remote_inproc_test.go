package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"stepwise.dev/stepwise/internal/mcpserver"
	"stepwise.dev/stepwise/internal/service"
)

// inProcessServer serves a stored MCP server over HTTP in this process
// (so that the race detector sees the client and the server), with a
// bearer token; it returns the MCP endpoint.
func inProcessServer(t *testing.T) string {
	t.Helper()
	svc, err := service.Open(context.Background(), service.Options{Home: t.TempDir(), Durability: "normal"})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(nil)
	base := "http://" + ts.Listener.Addr().String()
	srv := mcpserver.New(svc, mcpserver.Options{BaseURL: base})
	srv.Start(context.Background())
	ts.Config.Handler = srv.HTTPHandler(mcpserver.HTTPOptions{AuthTokens: []string{remoteTokenInProc}})
	ts.Start()
	t.Cleanup(func() {
		ts.Close()
		srv.Close()
		_ = svc.Close(context.Background())
	})
	return base + "/mcp"
}

const remoteTokenInProc = "in-process-token-0123456789"

// The client, in process with the server: a run whose answers are all
// in the file completes (the secret through the secret page), and the
// session file follows it; a second client resumes a waiting run from
// that file.
func TestRemoteInProcess(t *testing.T) {
	url := inProcessServer(t)
	t.Setenv("STEPWISE_TOKEN", remoteTokenInProc)
	dir := t.TempDir()
	wf := filepath.Join(dir, "q.yaml")
	if err := os.WriteFile(wf, []byte(remoteQuestionsInProc), 0o600); err != nil {
		t.Fatal(err)
	}
	answers := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	sessPath := filepath.Join(dir, "s.json")
	var out, errOut bytes.Buffer
	code := Main([]string{"run", "--server", url, wf, "--answers", answers("a.yaml", "name: Ada\n"), "--no-input", "--session", sessPath}, &out, &errOut)
	if code != ExitWaiting {
		t.Fatalf("exit %d\n%s\n%s", code, &out, &errOut)
	}
	out.Reset()
	errOut.Reset()
	code = Main([]string{"resume", "--session", sessPath, "--answers", answers("b.yaml", "age: 7\npw: s3cret-in-proc\n"), "--json"}, &out, &errOut)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, &out, &errOut)
	}
	var res runResult
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatal(err)
	}
	if res.Status != "succeeded" || res.Outputs["greeting"] != "hi Ada" || res.Outputs["age"] != float64(7) {
		t.Fatalf("result %+v", res)
	}
	b, err := os.ReadFile(sessPath)
	if err != nil {
		t.Fatal(err)
	}
	var s remoteSession
	if err := json.Unmarshal(b, &s); err != nil || s.RunID != res.RunID || s.Status != "succeeded" || bytes.Contains(b, []byte("s3cret-in-proc")) {
		t.Fatalf("session file %s (%v)", b, err)
	}
}

const remoteQuestionsInProc = `version: 1
name: remote-questions
steps:
  - id: name
    ask: {prompt: "Your-name?", type: string}
  - id: age
    ask: {prompt: "Your-age?", type: integer, min: 0}
  - id: pw
    ask: {prompt: "A-password?", type: string, secret: true}
  - id: greet
    uses: transform
    with: {value: "${{ 'hi ' + steps.name.answer }}"}
outputs:
  greeting: ${{ steps.greet.output }}
  age: ${{ steps.age.answer }}
`
