package engine

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"stepwise.dev/stepwise/internal/store"
	"stepwise.dev/stepwise/internal/store/sqlite"
	"stepwise.dev/stepwise/internal/workflow"
)

var testKey = []byte("0123456789abcdef0123456789abcdef")

type harness struct {
	t     *testing.T
	eng   *Engine
	store *sqlite.Store
	path  string
	env   map[string]string
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	h := &harness{t: t, path: filepath.Join(t.TempDir(), "test.db"), env: map[string]string{}}
	h.open()
	return h
}

func (h *harness) open() {
	h.t.Helper()
	s, err := sqlite.Open(context.Background(), h.path, sqlite.Options{Durability: sqlite.Normal})
	if err != nil {
		h.t.Fatal(err)
	}
	eng, err := New(Config{Store: s, Key: testKey, LookupEnv: func(k string) (string, bool) { v, ok := h.env[k]; return v, ok }})
	if err != nil {
		h.t.Fatal(err)
	}
	h.store, h.eng = s, eng
	h.t.Cleanup(func() { h.close() })
}

func (h *harness) close() {
	if h.eng != nil {
		_ = h.eng.Close(context.Background())
		_ = h.store.Close()
		h.eng = nil
	}
}

func (h *harness) start(doc string, inputs map[string]any) (string, error) {
	h.t.Helper()
	res := workflow.Check([]byte(doc), workflow.Options{})
	if !res.Valid() {
		h.t.Fatalf("invalid workflow: %v", res.Violations)
	}
	def, _ := workflow.Canonical(res.Source.Value)
	return h.eng.Start(context.Background(), StartRequest{Workflow: res.Workflow, Version: res.Version, Definition: def, Inputs: inputs})
}

func (h *harness) wait(id string) store.Run {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := h.eng.Wait(ctx, id); err != nil {
		h.t.Fatal(err)
	}
	r, err := h.store.GetRun(ctx, id)
	if err != nil {
		h.t.Fatal(err)
	}
	return r
}

func (h *harness) pause(id string) Pause {
	h.t.Helper()
	ps, err := h.eng.Pauses(context.Background(), id)
	if err != nil || len(ps) != 1 {
		h.t.Fatalf("pauses: %v %v", ps, err)
	}
	return ps[0]
}

func outputs(t *testing.T, r store.Run) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Outputs, &m); err != nil {
		t.Fatalf("outputs %s: %v", r.Outputs, err)
	}
	return m
}

const questionFlow = `version: 1
name: greet
inputs:
  greeting: {type: string, default: Hello}
steps:
  - id: name
    ask: {prompt: "Your name?", type: string, pattern: '^[A-Za-z]+$'}
  - id: shout
    if: ${{ steps.name.answer == "Bob" }}
    uses: transform
    with: {value: "${{ upper(steps.name.answer) }}"}
  - id: say
    uses: transform
    with: {value: "${{ inputs.greeting }}, ${{ steps.name.answer }}!"}
outputs:
  message: ${{ steps.say.output }}
  shouted: ${{ steps.shout.output }}
`

func TestQuestionFlow(t *testing.T) {
	h := newHarness(t)
	id, err := h.start(questionFlow, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := h.wait(id); r.Status != store.StatusWaiting {
		t.Fatalf("status %s", r.Status)
	}
	p := h.pause(id)
	if p.Kind != KindQuestion || p.StepID != "name" || p.Prompt != "Your name?" || p.Token == "" {
		t.Fatalf("pause %+v", p)
	}
	// An invalid answer changes nothing; the token stays usable.
	_, err = h.eng.Continue(context.Background(), p.Token, "not valid!")
	if CodeOf(err) != CodeAnswerInvalid {
		t.Fatalf("invalid answer: %v", err)
	}
	if r, _ := h.store.GetRun(context.Background(), id); r.Status != store.StatusWaiting {
		t.Fatalf("status after invalid answer: %s", r.Status)
	}
	if _, err := h.eng.Continue(context.Background(), p.Token, "Bob"); err != nil {
		t.Fatal(err)
	}
	r := h.wait(id)
	if r.Status != store.StatusSucceeded {
		t.Fatalf("status %s: %s", r.Status, r.Error)
	}
	out := outputs(t, r)
	if out["message"] != "Hello, Bob!" || out["shouted"] != "BOB" {
		t.Errorf("outputs %v", out)
	}
	if _, err := h.eng.Continue(context.Background(), p.Token, "Bob"); CodeOf(err) != CodeTokenAlreadyUsed {
		t.Errorf("second continue: %v", err)
	}
}

func TestContinueRace(t *testing.T) {
	h := newHarness(t)
	id, err := h.start(questionFlow, nil)
	if err != nil {
		t.Fatal(err)
	}
	h.wait(id)
	tok := h.pause(id).Token
	var wins, used atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < 100; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := h.eng.Continue(context.Background(), tok, "Alice")
			switch {
			case err == nil:
				wins.Add(1)
			case CodeOf(err) == CodeTokenAlreadyUsed:
				used.Add(1)
			default:
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if wins.Load() != 1 || used.Load() != 99 {
		t.Fatalf("wins %d, already used %d", wins.Load(), used.Load())
	}
	answers, _ := h.store.Answers(context.Background(), id)
	if len(answers) != 1 {
		t.Fatalf("%d answers", len(answers))
	}
	if r := h.wait(id); r.Status != store.StatusSucceeded {
		t.Fatalf("status %s", r.Status)
	}
}

func TestTokensRejected(t *testing.T) {
	h := newHarness(t)
	id, _ := h.start(questionFlow, nil)
	h.wait(id)
	tok := h.pause(id).Token
	tampered := tok[:len(tok)-2] + "xx"
	if _, err := h.eng.Continue(context.Background(), tampered, "Al"); CodeOf(err) != CodeTokenInvalid {
		t.Errorf("tampered: %v", err)
	}
	if _, err := h.eng.Continue(context.Background(), "garbage", "Al"); CodeOf(err) != CodeTokenInvalid {
		t.Errorf("garbage: %v", err)
	}
	other, _ := New(Config{Store: h.store, Key: []byte("another key, 32 bytes long......")})
	if _, err := other.Continue(context.Background(), tok, "Al"); CodeOf(err) != CodeTokenInvalid {
		t.Errorf("foreign: %v", err)
	}
	later, _ := New(Config{Store: h.store, Key: testKey, Now: func() time.Time { return time.Now().Add(25 * time.Hour) }})
	if _, err := later.Continue(context.Background(), tok, "Al"); CodeOf(err) != CodeTokenExpired {
		t.Errorf("expired: %v", err)
	}
}

func TestInputsValidated(t *testing.T) {
	h := newHarness(t)
	doc := `version: 1
name: inputs
inputs:
  region: {type: string, enum: [fsn1, nbg1]}
  count: {type: integer, minimum: 1, default: 2}
  token: {type: string, secret: true, env: API_TOKEN}
steps:
  - id: a
    uses: transform
    with: {value: "${{ inputs.region }}-${{ inputs.count }}"}
outputs:
  v: ${{ steps.a.output }}
`
	_, err := h.start(doc, map[string]any{"region": "xx", "count": 0, "extra": 1})
	var ee *Error
	if !errors.As(err, &ee) || ee.Code != CodeInputInvalid || len(ee.Violations) != 4 {
		t.Fatalf("err %v", err)
	}
	h.env["API_TOKEN"] = "s3cr3t-token"
	id, err := h.start(doc, map[string]any{"region": "fsn1"})
	if err != nil {
		t.Fatal(err)
	}
	r := h.wait(id)
	if out := outputs(t, r); out["v"] != "fsn1-2" {
		t.Errorf("outputs %v", out)
	}
	if string(r.Inputs) == "" || json.Valid(r.Inputs) && containsBytes(r.Inputs, "s3cr3t") {
		t.Errorf("secret stored in clear: %s", r.Inputs)
	}
}

func containsBytes(b []byte, s string) bool {
	return len(s) > 0 && len(b) >= len(s) && string(b) != "" && (func() bool {
		for i := 0; i+len(s) <= len(b); i++ {
			if string(b[i:i+len(s)]) == s {
				return true
			}
		}
		return false
	})()
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 30s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
