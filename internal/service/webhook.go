package service

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"stepwise.dev/stepwise/code"
	"stepwise.dev/stepwise/internal/engine"
	"stepwise.dev/stepwise/internal/library"
	"stepwise.dev/stepwise/internal/workflow"
)

// Error codes of webhooks.
const (
	// CodeHookNotFound: no library workflow declares a webhook of that name.
	CodeHookNotFound = "HOOK_NOT_FOUND"
	// CodeHookUnavailable: the hook's secret is not in the environment the
	// server lets workflows read (--allow-env); the hook is not served.
	CodeHookUnavailable = "HOOK_UNAVAILABLE"
	// CodeSignatureInvalid: the X-Stepwise-Signature header is missing or
	// is not the body's HMAC-SHA256 with the hook's secret.
	CodeSignatureInvalid = "SIGNATURE_INVALID"
	// CodeDeliveryReplayed: the delivery id was seen within DeliveryWindow.
	CodeDeliveryReplayed = "DELIVERY_REPLAYED"
	// CodeHookTaken: another saved workflow declares a webhook of that name.
	CodeHookTaken = "HOOK_TAKEN"
)

// DeliveryWindow is how long a webhook delivery id is remembered: the same
// id again within it is a replay.
const DeliveryWindow = 24 * time.Hour

// MaxHookBody bounds a webhook request's body.
const MaxHookBody = 1 << 20

// maxDeliveryID bounds a delivery id's length.
const maxDeliveryID = 200

// HookRequest is one webhook delivery as a surface received it.
type HookRequest struct {
	Name string
	// Body is the raw body: the run's inputs as a JSON object, and what
	// the signature is computed over.
	Body []byte
	// Signature is the X-Stepwise-Signature header: sha256=<hex>.
	Signature string
	// Delivery is the X-Stepwise-Delivery header ("": no replay check).
	Delivery string
}

// HookResult is the run a webhook started.
type HookResult struct {
	RunID  string `json:"run_id"`
	Status string `json:"status"`
}

// hookIndex maps webhook names to the saved workflows declaring them, so
// that a delivery (an unauthenticated request until its signature is
// checked) parses one workflow, not the library. Library changes through
// the service (or another replica) invalidate it; a name it does not know
// rebuilds it at most every hookRebuildEvery, for files changed behind the
// service's back.
type hookIndex struct {
	mu    sync.Mutex
	m     map[string]string
	valid bool
	built time.Time
}

// hookRebuildEvery bounds how often an unknown hook name rebuilds the
// index.
const hookRebuildEvery = 5 * time.Second

func (h *hookIndex) invalidate() {
	h.mu.Lock()
	h.valid = false
	h.mu.Unlock()
}

// hookOwner returns the saved workflow declaring the webhook name ("" when
// none does).
func (s *Service) hookOwner(name string) (string, error) {
	h := &s.hooks
	h.mu.Lock()
	defer h.mu.Unlock()
	owner, ok := h.m[name]
	if h.valid && (ok || time.Since(h.built) < hookRebuildEvery) {
		return owner, nil
	}
	names, err := s.Library.Names(library.Saved)
	if err != nil {
		return "", err
	}
	m := map[string]string{}
	for _, n := range names {
		l, err := s.LoadLibraryWorkflow(n)
		if err != nil {
			continue // an invalid entry serves no hook
		}
		for _, wh := range l.Workflow.Webhooks() {
			if _, taken := m[wh.Name]; !taken {
				m[wh.Name] = n
			}
		}
	}
	h.m, h.valid, h.built = m, true, time.Now()
	return m[name], nil
}

// findHook returns the saved workflow declaring the webhook name.
func (s *Service) findHook(name string) (*Loaded, *workflow.Webhook, error) {
	owner, err := s.hookOwner(name)
	if err != nil {
		return nil, nil, err
	}
	if owner != "" {
		if l, err := s.LoadLibraryWorkflow(owner); err == nil {
			for _, h := range l.Workflow.Webhooks() {
				if h.Name == name {
					return l, h, nil
				}
			}
		}
		s.hooks.invalidate() // changed behind the service's back
	}
	return nil, nil, &engine.Error{Code: CodeHookNotFound, Category: code.CategoryNotFound, Name: name,
		Message: fmt.Sprintf("no workflow of the library declares the webhook %q", name)}
}

// Hook serves a webhook delivery: it finds the library workflow declaring
// the hook, checks the body's signature with the hook's secret (read
// through the env policy) in constant time, refuses a delivery id seen
// within DeliveryWindow, checks the body as the workflow's inputs, and
// starts a run with them.
func (s *Service) Hook(ctx context.Context, req HookRequest) (HookResult, error) {
	l, h, err := s.findHook(req.Name)
	if err != nil {
		return HookResult{}, err
	}
	secretValue, ok := s.envLookup(h.SecretEnv)
	if !ok || secretValue == "" {
		s.log.Warn("webhook refused: its secret is unavailable", "hook", req.Name, "secret_env", h.SecretEnv)
		return HookResult{}, &engine.Error{Code: CodeHookUnavailable, Category: code.CategoryInternal, Name: req.Name,
			Message:    fmt.Sprintf("webhook %q is not served: its secret is unavailable", req.Name),
			Suggestion: "the operator sets the secret's environment variable and allows it with --allow-env"}
	}
	if !validSignature([]byte(secretValue), req.Body, req.Signature) {
		return HookResult{}, &engine.Error{Code: CodeSignatureInvalid, Category: code.CategoryAuth, Name: req.Name,
			Message:    "the request's signature does not match its body",
			Suggestion: "send X-Stepwise-Signature: sha256=<hex HMAC-SHA256 of the raw body with the hook's secret>"}
	}
	var inputs map[string]any
	dec := json.NewDecoder(bytes.NewReader(req.Body))
	dec.UseNumber()
	if err := dec.Decode(&inputs); err != nil || inputs == nil || dec.More() {
		return HookResult{}, &engine.Error{Code: engine.CodeInputInvalid, Category: code.CategoryValidation, Name: req.Name,
			Message: "the body is not a JSON object of inputs", Suggestion: `send the run's inputs as a JSON object, such as {"customer": "acme"}`}
	}
	inputs = plainNumbers(inputs)
	if res := s.Engine.ResolveInputs(l.Workflow, inputs); len(res.Violations) > 0 {
		return HookResult{}, &engine.Error{Code: engine.CodeInputInvalid, Category: code.CategoryValidation, Workflow: l.Workflow.Name,
			Message: "the body's inputs do not fit the workflow's", Violations: res.Violations,
			Suggestion: "fix the listed inputs and send again"}
	}
	if req.Delivery != "" {
		if len(req.Delivery) > maxDeliveryID {
			return HookResult{}, &engine.Error{Code: engine.CodeInputInvalid, Category: code.CategoryValidation, Name: req.Name,
				Message: fmt.Sprintf("the delivery id is longer than %d bytes", maxDeliveryID)}
		}
		ss, err := s.scheduleStore()
		if err != nil {
			return HookResult{}, err
		}
		seen, err := ss.SeenDelivery(ctx, req.Name, req.Delivery, s.now(), DeliveryWindow)
		if err != nil {
			return HookResult{}, err
		}
		if seen {
			return HookResult{}, &engine.Error{Code: CodeDeliveryReplayed, Category: code.CategoryConflict, Name: req.Name,
				Message:    fmt.Sprintf("delivery %q was received already", req.Delivery),
				Suggestion: "send a new delivery id for a new event; a retry of one that was answered 202 has started its run"}
		}
	}
	runID, err := s.StartRun(ctx, l, inputs, false)
	if err != nil {
		return HookResult{}, err
	}
	s.log.Info("webhook started a run", "hook", req.Name, "workflow", l.Workflow.Name, "run", runID)
	return HookResult{RunID: runID, Status: code.StatusRunning}, nil
}

// validSignature reports whether sig is "sha256=" and the hex HMAC-SHA256
// of body with key, compared in constant time.
func validSignature(key, body []byte, sig string) bool {
	hexSig, ok := strings.CutPrefix(sig, "sha256=")
	if !ok {
		return false
	}
	got, err := hex.DecodeString(hexSig)
	if err != nil {
		return false
	}
	m := hmac.New(sha256.New, key)
	m.Write(body)
	return hmac.Equal(got, m.Sum(nil))
}

// plainNumbers turns json.Number values into int64 or float64, as a run's
// inputs are.
func plainNumbers(m map[string]any) map[string]any {
	for k, v := range m {
		m[k] = plainNumber(v)
	}
	return m
}

func plainNumber(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	case map[string]any:
		return plainNumbers(x)
	case []any:
		for i := range x {
			x[i] = plainNumber(x[i])
		}
	}
	return v
}

// checkHookNames refuses a save whose webhooks another saved workflow
// already declares: a hook's name is unique across the library.
func (s *Service) checkHookNames(wf *workflow.Workflow) error {
	var vs []workflow.Violation
	for i, t := range wf.Triggers {
		if t == nil || t.Webhook == nil {
			continue
		}
		owner, err := s.hookOwner(t.Webhook.Name)
		if err != nil {
			return err
		}
		if owner != "" && owner != wf.Name {
			vs = append(vs, workflow.Violation{Path: fmt.Sprintf("/triggers/%d/webhook/name", i), Rule: workflow.RuleDuplicateID,
				Message: fmt.Sprintf("workflow %s already declares the webhook %q", owner, t.Webhook.Name)})
		}
	}
	if len(vs) == 0 {
		return nil
	}
	return &engine.Error{Code: CodeHookTaken, Category: code.CategoryConflict, Workflow: wf.Name, Violations: vs,
		Message:    fmt.Sprintf("workflow %q is not saved: a webhook name it declares is taken", wf.Name),
		Suggestion: "give the webhook another name, or remove it from the other workflow first"}
}
