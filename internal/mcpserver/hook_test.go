package mcpserver

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"stepwise.dev/stepwise/internal/secret"
	"stepwise.dev/stepwise/internal/service"
)

const hookWorkflow = `version: 1
name: intake
inputs:
  customer: {type: string}
  seats: {type: integer, minimum: 1}
steps:
  - id: a
    uses: log
    with: {message: "${{ inputs.customer }}"}
triggers:
  - webhook: {name: intake, secret_env: HOOK_SECRET}
`

func sign(key, body string) string {
	m := hmac.New(sha256.New, []byte(key))
	m.Write([]byte(body))
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

func hookServer(t *testing.T) (*service.Service, http.Handler) {
	t.Helper()
	env := map[string]string{"HOOK_SECRET": "s3cret", "NOT_ALLOWED": "x"}
	svc, err := service.Open(context.Background(), service.Options{Home: t.TempDir(), Durability: "normal",
		EnvPolicy: secret.EnvPolicy{Restricted: true, Allow: []string{"HOOK_SECRET"}},
		LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
	if err != nil {
		t.Fatal(err)
	}
	srv := NewUnattached(Options{})
	srv.Attach(svc)
	srv.Start(context.Background())
	t.Cleanup(func() { srv.Close(); svc.Close(context.Background()) })
	if _, err := svc.SaveWorkflow(context.Background(), service.SaveRequest{Content: hookWorkflow}); err != nil {
		t.Fatal(err)
	}
	return svc, srv.HTTPHandler(HTTPOptions{})
}

func postHook(h http.Handler, name, body, sig, delivery string) (int, map[string]any) {
	req := httptest.NewRequest(http.MethodPost, "/hooks/"+name, strings.NewReader(body))
	if sig != "" {
		req.Header.Set("X-Stepwise-Signature", sig)
	}
	if delivery != "" {
		req.Header.Set("X-Stepwise-Delivery", delivery)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var out map[string]any
	_ = json.Unmarshal(rec.Body.Bytes(), &out)
	return rec.Code, out
}

func errCode(out map[string]any) string {
	e, _ := out["error"].(map[string]any)
	s, _ := e["code"].(string)
	return s
}

// A signed webhook starts a run whose inputs are its body.
func TestHookStartsARunWithTheBodyAsInputs(t *testing.T) {
	svc, h := hookServer(t)
	body := `{"customer": "acme", "seats": 12}`
	code, out := postHook(h, "intake", body, sign("s3cret", body), "")
	if code != http.StatusAccepted || out["run_id"] == "" || out["status"] != "running" {
		t.Fatalf("signed delivery: %d %v", code, out)
	}
	runID, _ := out["run_id"].(string)
	if st, err := svc.Wait(context.Background(), runID, 10*time.Second); err != nil || st != "succeeded" {
		t.Fatalf("run: %s %v", st, err)
	}
	v, err := svc.GetRun(context.Background(), runID)
	if err != nil || v.Workflow != "intake" || v.Inputs["customer"] != "acme" || v.Inputs["seats"] != float64(12) && v.Inputs["seats"] != int64(12) {
		t.Fatalf("run %s: workflow %s inputs %#v, %v", runID, v.Workflow, v.Inputs, err)
	}
}

// A missing or wrong signature is 401 and starts nothing.
func TestHookRefusesABadSignature(t *testing.T) {
	svc, h := hookServer(t)
	body := `{"customer": "acme", "seats": 1}`
	for name, sig := range map[string]string{
		"missing":    "",
		"wrong key":  sign("other", body),
		"other body": sign("s3cret", body+" "),
		"not hex":    "sha256=zz",
		"no prefix":  strings.TrimPrefix(sign("s3cret", body), "sha256="),
	} {
		if code, out := postHook(h, "intake", body, sig, ""); code != http.StatusUnauthorized || errCode(out) != service.CodeSignatureInvalid {
			t.Errorf("%s: %d %v", name, code, out)
		}
	}
	runs, _, err := svc.ListRuns(context.Background(), service.RunFilter{})
	if err != nil || len(runs) != 0 {
		t.Fatalf("runs after refused deliveries: %+v %v", runs, err)
	}
}

// A delivery id seen already is refused (409); a new one is served.
func TestHookRefusesAReplayedDelivery(t *testing.T) {
	_, h := hookServer(t)
	body := `{"customer": "acme", "seats": 2}`
	if code, out := postHook(h, "intake", body, sign("s3cret", body), "d-1"); code != http.StatusAccepted {
		t.Fatalf("first: %d %v", code, out)
	}
	if code, out := postHook(h, "intake", body, sign("s3cret", body), "d-1"); code != http.StatusConflict || errCode(out) != service.CodeDeliveryReplayed {
		t.Fatalf("replay: %d %v", code, out)
	}
	if code, out := postHook(h, "intake", body, sign("s3cret", body), "d-2"); code != http.StatusAccepted {
		t.Fatalf("new delivery: %d %v", code, out)
	}
}

// Inputs are validated; unknown hooks, unavailable secrets and oversized
// bodies are refused; a hook name is unique across the library.
func TestHookRefusals(t *testing.T) {
	svc, h := hookServer(t)
	bad := `{"customer": "acme", "seats": 0}`
	if code, out := postHook(h, "intake", bad, sign("s3cret", bad), ""); code != http.StatusBadRequest || errCode(out) != "INPUT_INVALID" {
		t.Fatalf("invalid inputs: %d %v", code, out)
	}
	notObject := `[1]`
	if code, out := postHook(h, "intake", notObject, sign("s3cret", notObject), ""); code != http.StatusBadRequest {
		t.Fatalf("not an object: %d %v", code, out)
	}
	if code, out := postHook(h, "nowhere", "{}", sign("s3cret", "{}"), ""); code != http.StatusNotFound || errCode(out) != service.CodeHookNotFound {
		t.Fatalf("unknown hook: %d %v", code, out)
	}
	big := `{"customer": "` + strings.Repeat("a", service.MaxHookBody) + `"}`
	if code, _ := postHook(h, "intake", big, sign("s3cret", big), ""); code != http.StatusRequestEntityTooLarge {
		t.Fatalf("oversized body: %d", code)
	}
	taken := strings.Replace(hookWorkflow, "name: intake\ninputs", "name: copycat\ninputs", 1)
	if _, err := svc.SaveWorkflow(context.Background(), service.SaveRequest{Content: taken}); service.CodeOf(err) != service.CodeHookTaken {
		t.Fatalf("a second workflow with hook intake: %v", err)
	}
	hidden := strings.NewReplacer("name: intake\ninputs", "name: hidden\ninputs", "{name: intake, secret_env: HOOK_SECRET}", "{name: hidden, secret_env: NOT_ALLOWED}").Replace(hookWorkflow)
	if _, err := svc.SaveWorkflow(context.Background(), service.SaveRequest{Content: hidden}); err != nil {
		t.Fatal(err)
	}
	body := `{"customer": "acme", "seats": 1}`
	if code, out := postHook(h, "hidden", body, sign("x", body), ""); code != http.StatusServiceUnavailable || errCode(out) != service.CodeHookUnavailable {
		t.Fatalf("secret not allowed: %d %v", code, out)
	}
	if _, err := svc.DeleteWorkflow(context.Background(), "intake", false, ""); err != nil {
		t.Fatal(err)
	}
	if code, out := postHook(h, "intake", body, sign("s3cret", body), ""); code != http.StatusNotFound {
		t.Fatalf("hook of a deleted workflow: %d %v", code, out)
	}
	if _, err := svc.SaveWorkflow(context.Background(), service.SaveRequest{Content: taken}); err != nil {
		t.Fatalf("the hook's name is free again: %v", err)
	}
}
