package service

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"stepwise.dev/stepwise/internal/action"
)

// regions is a test double for an action listing what a server offers.
type regions struct{ fail bool }

func (regions) Name() string        { return "list_regions" }
func (regions) Description() string { return "test double" }
func (regions) Safety() string      { return action.ReadOnly }
func (r regions) Run(_ context.Context, c action.Call) (any, error) {
	if r.fail {
		return nil, errors.New("connection refused")
	}
	return map[string]any{"items": []any{map[string]any{"id": "eu", "name": "Europe"}, map[string]any{"id": "us", "name": "Americas"}}, "prefix": c.Input["prefix"]}, nil
}

const choicesWorkflow = `version: 1
name: pick
inputs:
  prefix: {type: string, default: r}
steps:
  - id: region
    ask:
      prompt: Region?
      type: choice
      choices_from:
        uses: list_regions
        with: {prefix: "${{ inputs.prefix }}"}
        value: 'map(output.items, {{value: .id, label: output.prefix + "-" + .name}})'
outputs:
  region: ${{ steps.region.answer }}
`

func TestChoicesFromAnAction(t *testing.T) {
	for _, fail := range []bool{false, true} {
		ctx := context.Background()
		svc, err := Open(ctx, Options{Home: t.TempDir(), Durability: "normal"})
		if err != nil {
			t.Fatal(err)
		}
		svc.Actions.Register(regions{fail: fail})
		l, err := svc.Parse([]byte(choicesWorkflow))
		if err != nil {
			t.Fatal(err)
		}
		id, err := svc.StartRun(ctx, l, nil, false)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := svc.Wait(ctx, id, 20*time.Second); err != nil {
			t.Fatal(err)
		}
		v, err := svc.GetRun(ctx, id)
		if err != nil || v.Pause == nil {
			t.Fatalf("%v %+v", err, v)
		}
		q := v.Pause.Question
		if !fail {
			if q.Type != "choice" || len(q.Choices) != 2 || q.Choices[0].Value != "eu" || q.Choices[1].Label != "r-Americas" || q.ChoicesError != "" {
				t.Fatalf("choices: %+v", q)
			}
			if _, err := svc.Engine.Continue(ctx, v.Pause.Token, "mars"); err == nil {
				t.Fatal("an answer outside the computed choices was accepted")
			}
		} else if q.Type != "string" || len(q.Choices) != 0 || !strings.Contains(q.ChoicesError, "connection refused") {
			t.Fatalf("fallback: %+v", q)
		}
		if _, err := svc.Engine.Continue(ctx, v.Pause.Token, "us"); err != nil {
			t.Fatal(err)
		}
		if st, _ := svc.Wait(ctx, id, 20*time.Second); st != "succeeded" {
			t.Fatalf("run %s", st)
		}
		svc.Close(ctx)
	}
}

func TestChoicesFromIsChecked(t *testing.T) {
	svc, err := Open(context.Background(), Options{Home: t.TempDir(), Durability: "normal"})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close(context.Background())
	bad := strings.NewReplacer("uses: list_regions", "uses: lst_regions", "type: choice", "type: string", "output.items", "outptu.items").Replace(choicesWorkflow)
	v := svc.ValidateContent([]byte(bad))
	text := ""
	for _, x := range v.Violations {
		text += x.Message + "\n"
	}
	for _, want := range []string{`no action named "lst_regions"`, "choices_from applies to choice and multi-choice questions", `unknown name "outptu"`} {
		if !strings.Contains(text, want) {
			t.Errorf("missing %q in\n%s", want, text)
		}
	}
}

// choices_from backed by the real http action: the question offers exactly
// the server's list; with the server down it is still asked, the error in
// the pause.
func TestChoicesFromHTTP(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"regions": [{"id": "fsn1", "city": "Falkenstein"}, {"id": "hel1", "city": "Helsinki"}, {"id": "ash", "city": "Ashburn"}]}`))
	}))
	wf := `version: 1
name: pick
inputs:
  api: {type: string}
steps:
  - id: region
    ask:
      prompt: Region?
      type: choice
      choices_from:
        uses: http
        with: {url: '${{ inputs.api }}/regions'}
        value: 'map(output.body.regions, {{value: .id, label: .city}})'
`
	for _, down := range []bool{false, true} {
		ctx := context.Background()
		svc, err := Open(ctx, Options{Home: t.TempDir(), Durability: "normal"})
		if err != nil {
			t.Fatal(err)
		}
		l, err := svc.Parse([]byte(wf))
		if err != nil {
			t.Fatal(err)
		}
		api := srv.URL
		if down {
			api = "http://127.0.0.1:1"
		}
		id, err := svc.StartRun(ctx, l, map[string]any{"api": api}, false)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := svc.Wait(ctx, id, 30*time.Second); err != nil {
			t.Fatal(err)
		}
		v, err := svc.GetRun(ctx, id)
		if err != nil || v.Pause == nil {
			t.Fatalf("%v %+v", err, v)
		}
		q := v.Pause.Question
		var got []string
		for _, c := range q.Choices {
			got = append(got, fmt.Sprint(c.Value)+"="+c.Label)
		}
		if !down && (q.Type != "choice" || strings.Join(got, ",") != "fsn1=Falkenstein,hel1=Helsinki,ash=Ashburn") {
			t.Fatalf("choices %v (%+v)", got, q)
		}
		if down && (q.Type != "string" || len(got) != 0 || !strings.Contains(q.ChoicesError, "http")) {
			t.Fatalf("server down: %+v", q)
		}
		svc.Close(ctx)
	}
}
