package service

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"stepwise.dev/stepwise/internal/engine"
	"stepwise.dev/stepwise/internal/generate"
)

const signupSchema = `{
  "type": "object",
  "title": "Sign up",
  "required": ["username", "age", "plan", "password"],
  "properties": {
    "username": {"type": "string", "title": "User name", "pattern": "^[a-z]+$", "minLength": 3, "maxLength": 12},
    "age": {"type": "integer", "minimum": 18, "exclusiveMaximum": 131},
    "score": {"type": "number", "minimum": 0.5, "maximum": 9.5, "default": 1.5},
    "newsletter": {"type": "boolean", "default": false},
    "plan": {"enum": ["free", "pro"], "description": "Billing plan"},
    "regions": {"type": "array", "items": {"enum": ["eu", "us", "ap"]}, "minItems": 1},
    "password": {"type": "string", "format": "password"},
    "api_token": {"type": "string", "writeOnly": true},
    "nickname": {"type": "string"},
    "id": {"type": "string", "readOnly": true},
    "address": {"type": "object", "required": ["city"], "properties": {"city": {"type": "string"}, "zip": {"type": "string", "pattern": "^[0-9]{5}$", "default": "00000"}}},
    "tags": {"type": "array", "items": {"type": "string"}}
  }
}`

func TestGeneratedQuestionFlowAsksTheSchemaFields(t *testing.T) {
	ctx := context.Background()
	svc, err := Open(ctx, Options{Home: t.TempDir(), Durability: "normal"})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close(ctx)
	g, err := svc.GenerateWorkflow([]byte(signupSchema), "", generate.Options{Name: "signup"})
	if err != nil {
		t.Fatal(err)
	}
	if !g.Valid {
		t.Fatalf("generated workflow invalid: %+v\n%s", g.Violations, g.Content)
	}
	l, err := svc.Parse([]byte(g.Content))
	if err != nil {
		t.Fatal(err)
	}
	id, err := svc.StartRun(ctx, l, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	answers := map[string]any{
		"username": "ada", "age": 36, "score": 2.5, "newsletter": true, "plan": "pro", "regions": []any{"eu", "ap"},
		"password": "hunter22", "api_token": "tok", "nickname": "", "address_city": "Paris", "address_zip": "75001", "tags": "a, b",
	}
	type asked struct {
		typ, pattern string
		min, max     any
		secret       bool
		choices      int
	}
	want := map[string]asked{
		"username": {typ: "string", pattern: "^[a-z]+$", min: 3.0, max: 12.0}, "age": {typ: "integer", min: 18.0, max: 130.0},
		"score": {typ: "number", min: 0.5, max: 9.5}, "newsletter": {typ: "boolean"}, "plan": {typ: "choice", choices: 2},
		"regions": {typ: "multi-choice", min: 1.0, choices: 3}, "password": {typ: "string", secret: true},
		"api_token": {typ: "string", secret: true}, "nickname": {typ: "string"}, "address_city": {typ: "string"},
		"address_zip": {typ: "string", pattern: "^[0-9]{5}$"}, "tags": {typ: "string"},
	}
	var order []string
	for range 30 {
		if _, err := svc.Wait(ctx, id, 20*time.Second); err != nil {
			t.Fatal(err)
		}
		v, err := svc.GetRun(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if v.Pause == nil {
			if v.Status != "succeeded" {
				t.Fatalf("run %s: %s", v.Status, v.Error)
			}
			break
		}
		q := v.Pause.Question
		w, ok := want[v.Pause.StepID]
		if !ok {
			t.Fatalf("asked %q, which is not a field", v.Pause.StepID)
		}
		got := asked{typ: q.Type, pattern: q.Pattern, secret: q.Secret, choices: len(q.Choices)}
		if q.Min != nil {
			got.min = *q.Min
		}
		if q.Max != nil {
			got.max = *q.Max
		}
		if !reflect.DeepEqual(got, w) {
			t.Errorf("%s asked as %+v, want %+v", v.Pause.StepID, got, w)
		}
		order = append(order, v.Pause.StepID)
		if _, err := svc.Engine.Continue(ctx, v.Pause.Token, answers[v.Pause.StepID]); err != nil {
			var ee *engine.Error
			t.Fatalf("answer %s: %v %v", v.Pause.StepID, err, ee)
		}
	}
	if strings.Join(order, ",") != "username,age,score,newsletter,plan,regions,password,api_token,nickname,address_city,address_zip,tags" {
		t.Fatalf("asked in order %v", order)
	}
	v, _ := svc.GetRun(ctx, id)
	out, _ := json.Marshal(v.Outputs)
	for _, want := range []string{`"username":"ada"`, `"address":{"city":"Paris","zip":"75001"}`, `"tags":["a","b"]`, `"regions":["eu","ap"]`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("outputs %s lack %s", out, want)
		}
	}
	if strings.Contains(string(out), "hunter22") {
		t.Errorf("a secret answer is in the outputs in clear: %s", out)
	}
}

func TestGenerateForAnAction(t *testing.T) {
	svc, err := Open(context.Background(), Options{Home: t.TempDir(), Durability: "normal"})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close(context.Background())
	g, err := svc.GenerateWorkflow(nil, "log", generate.Options{Name: "say"})
	if err != nil || !g.Valid {
		t.Fatalf("%v %+v\n%s", err, g, g.Content)
	}
	if !strings.Contains(g.Content, "uses: log") || !strings.Contains(g.Content, "message: ${{ steps.message.answer }}") {
		t.Fatalf("content:\n%s", g.Content)
	}
	for _, bad := range [][]byte{[]byte(`{"type": "string"}`), []byte(`[1]`), []byte(`{"type":"object"}`)} {
		if _, err := svc.GenerateWorkflow(bad, "", generate.Options{}); err == nil {
			t.Errorf("%s: generated", bad)
		}
	}
	if _, err := svc.GenerateWorkflow([]byte(signupSchema), "", generate.Options{Name: "../x"}); err == nil {
		t.Error("an unsafe name was accepted")
	}
}
