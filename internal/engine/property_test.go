package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"stepwise.dev/stepwise/internal/store"
)

// TestStateRoundTrip: the engine's state survives serialization unchanged.
func TestStateRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		st := State{
			Cursor:    rapid.IntRange(0, 10000).Draw(t, "cursor"),
			PauseSeq:  rapid.Int64Range(0, 1<<40).Draw(t, "pause_seq"),
			StartedAt: time.Unix(rapid.Int64Range(0, 1<<34).Draw(t, "sec"), rapid.Int64Range(0, 999999999).Draw(t, "nsec")).UTC(),
		}
		b, err := json.Marshal(st)
		if err != nil {
			t.Fatal(err)
		}
		var back State
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(st, back) {
			t.Fatalf("round trip changed the state:\n%+v\n%+v", st, back)
		}
	})
}

const numberQuestion = `version: 1
name: numbers
steps:
  - id: n
    ask: {prompt: "How many?", type: integer, min: 1, max: 10}
  - id: done
    uses: transform
    with: {value: "${{ steps.n.answer * 2 }}"}
outputs:
  doubled: ${{ steps.done.output }}
`

// snapshot captures everything a continue could change.
type snapshot struct {
	Run     store.Run
	Events  int
	Answers int
	Pauses  []store.Pause
	Steps   int
}

func takeSnapshot(t interface{ Fatal(...any) }, s store.Store, id string) snapshot {
	ctx := context.Background()
	r, err := s.GetRun(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	ev, _ := s.Events(ctx, id, 0, 0)
	an, _ := s.Answers(ctx, id)
	ps, _ := s.OpenPauses(ctx, id)
	st, _ := s.Steps(ctx, id)
	r.UpdatedAt = time.Time{}
	return snapshot{Run: r, Events: len(ev), Answers: len(an), Pauses: ps, Steps: len(st)}
}

// TestInvalidContinueChangesNothing: any value that is not a valid answer
// is refused with every violation and leaves the run exactly as it was; the
// token still works afterwards.
func TestInvalidContinueChangesNothing(t *testing.T) {
	h := newHarness(t)
	id, err := h.start(numberQuestion, nil)
	if err != nil {
		t.Fatal(err)
	}
	h.wait(id)
	tok := h.pause(id).Token
	before := takeSnapshot(t, h.store, id)
	rapid.Check(t, func(rt *rapid.T) {
		bad := rapid.OneOf(
			rapid.Map(rapid.Int64Range(-1000, 0), func(n int64) any { return n }),
			rapid.Map(rapid.Int64Range(11, 1000), func(n int64) any { return n }),
			rapid.Map(rapid.Float64Range(1.01, 9.99), func(f float64) any { return f }),
			rapid.Map(rapid.String(), func(s string) any { return s }),
			rapid.Just[any](true),
			rapid.Just[any](nil),
			rapid.Just[any]([]any{int64(3)}),
			rapid.Just[any](map[string]any{"n": int64(3)}),
		).Draw(rt, "value")
		if f, ok := bad.(float64); ok && f == float64(int64(f)) {
			return // an integral float is a valid integer
		}
		_, err := h.eng.Continue(context.Background(), tok, bad)
		if CodeOf(err) != CodeAnswerInvalid {
			rt.Fatalf("value %#v: got %v, want %s", bad, err, CodeAnswerInvalid)
		}
		if after := takeSnapshot(t, h.store, id); !reflect.DeepEqual(before, after) {
			rt.Fatalf("value %#v changed the run:\n%+v\n%+v", bad, before, after)
		}
	})
	if _, err := h.eng.Continue(context.Background(), tok, int64(4)); err != nil {
		t.Fatalf("the token must still work after invalid answers: %v", err)
	}
	if r := h.wait(id); r.Status != store.StatusSucceeded || outputs(t, r)["doubled"] != 8.0 {
		t.Fatalf("run %s %s", r.Status, r.Outputs)
	}
}

// TestAnswerIDsFollowSubmissionOrder: answers get unique ids that increase
// in the order they were submitted, across runs; run ids are unique.
func TestAnswerIDsFollowSubmissionOrder(t *testing.T) {
	h := newHarness(t)
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(1, 6).Draw(rt, "runs")
		ids := map[string]bool{}
		var toks []string
		var runs []string
		for i := 0; i < n; i++ {
			id, err := h.start(numberQuestion, nil)
			if err != nil {
				rt.Fatal(err)
			}
			if ids[id] {
				rt.Fatalf("run id %s reused", id)
			}
			ids[id] = true
			h.wait(id)
			toks = append(toks, h.pause(id).Token)
			runs = append(runs, id)
		}
		order := rapid.Permutation(indexes(n)).Draw(rt, "order")
		var last int64
		for _, i := range order {
			res, err := h.eng.Continue(context.Background(), toks[i], int64(i%10+1))
			if err != nil {
				rt.Fatal(err)
			}
			if res.AnswerID <= last {
				rt.Fatalf("answer id %d after %d", res.AnswerID, last)
			}
			last = res.AnswerID
			answers, _ := h.store.Answers(context.Background(), runs[i])
			if len(answers) != 1 || answers[0].ID != res.AnswerID {
				rt.Fatalf("stored answers %+v, returned id %d", answers, res.AnswerID)
			}
		}
	})
}

func indexes(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

const autoQuestion = `version: 1
name: auto
inputs:
  preset: {type: string, required: false}
steps:
  - id: color
    ask:
      prompt: Color?
      type: choice
      choices: [red, green, blue]
      auto: ${{ inputs.preset }}
      env: COLOR
outputs:
  color: ${{ steps.color.answer }}
`

// TestAutoAnswers: an auto expression (or env variable) that yields a valid
// answer skips the question; a failing, empty or invalid one falls back to
// asking.
func TestAutoAnswers(t *testing.T) {
	h := newHarness(t)
	rapid.Check(t, func(rt *rapid.T) {
		preset := rapid.SampledFrom([]any{nil, "red", "green", "purple", "", int64(3)}).Draw(rt, "preset")
		envColor := rapid.SampledFrom([]string{"", "blue", "black"}).Draw(rt, "env")
		if envColor == "" {
			delete(h.env, "COLOR")
		} else {
			h.env["COLOR"] = envColor
		}
		inputs := map[string]any{}
		if preset != nil {
			inputs["preset"] = preset
		}
		id, err := h.start(autoQuestion, inputs)
		if err != nil {
			if CodeOf(err) == CodeInputInvalid {
				return // a non-string preset is refused before the run starts
			}
			rt.Fatal(err)
		}
		r := h.wait(id)
		want := ""
		switch {
		case preset == "red" || preset == "green":
			want = preset.(string)
		case envColor == "blue":
			want = "blue"
		}
		if want == "" {
			if r.Status != store.StatusWaiting {
				rt.Fatalf("preset %v env %q: want the question asked, got %s", preset, envColor, r.Status)
			}
			return
		}
		if r.Status != store.StatusSucceeded || outputs(t, r)["color"] != want {
			rt.Fatalf("preset %v env %q: status %s outputs %s, want %s", preset, envColor, r.Status, r.Outputs, want)
		}
	})
}

const loopQuestion = `version: 1
name: loop
steps:
  - id: name
    ask: {prompt: "Name?", type: string}
  - id: confirm
    ask: {prompt: "Is ${{ steps.name.answer }} right?", type: boolean}
  - id: again
    switch:
      - if: ${{ !steps.confirm.answer }}
        goto: name
    max_visits: 5
outputs:
  name: ${{ steps.name.answer }}
`

// TestQuestionOffersPreviousAnswer: when a question is asked again in the
// same run, its previous answer is offered as the default.
func TestQuestionOffersPreviousAnswer(t *testing.T) {
	h := newHarness(t)
	rapid.Check(t, func(rt *rapid.T) {
		id, err := h.start(loopQuestion, nil)
		if err != nil {
			rt.Fatal(err)
		}
		rounds := rapid.IntRange(1, 4).Draw(rt, "rounds")
		var last string
		for i := 0; i < rounds; i++ {
			h.wait(id)
			p := h.pause(id)
			if i == 0 && (p.Default != nil || p.Previous) {
				rt.Fatalf("first ask has a default: %+v", p.Question)
			}
			if i > 0 && (p.Default != last || !p.Previous) {
				rt.Fatalf("round %d: default %v (previous %v), want %q", i, p.Default, p.Previous, last)
			}
			last = rapid.StringMatching(`[A-Za-z]{1,12}`).Draw(rt, "name")
			if _, err := h.eng.Continue(context.Background(), p.Token, last); err != nil {
				rt.Fatal(err)
			}
			h.wait(id)
			ok := i == rounds-1
			if _, err := h.eng.Continue(context.Background(), h.pause(id).Token, ok); err != nil {
				rt.Fatal(err)
			}
		}
		if r := h.wait(id); r.Status != store.StatusSucceeded || outputs(t, r)["name"] != last {
			rt.Fatalf("status %s outputs %s", r.Status, r.Outputs)
		}
	})
}

const secretFlow = `version: 1
name: secrets
inputs:
  api_key: {type: string, secret: true}
steps:
  - id: password
    ask: {prompt: "Password?", type: string, secret: true}
  - id: use
    uses: transform
    with: {value: "key=${{ inputs.api_key }} pw=${{ steps.password.answer }}"}
  - id: say
    uses: log
    with: {message: "${{ steps.use.output }}"}
  - id: broken
    uses: noop
    with: {fail: "cannot use ${{ inputs.api_key }}"}
    continue_on_error: true
outputs:
  used: ${{ steps.use.output }}
  raw: ${{ inputs.api_key }}
`

// TestSecretsNeverInClear: secret inputs and answers never appear in clear
// in the database file (and its WAL), in events, or in outputs.
func TestSecretsNeverInClear(t *testing.T) {
	h := newHarness(t)
	var secrets []string
	var seen bytes.Buffer
	rapid.Check(t, func(rt *rapid.T) {
		key := "K" + rapid.StringMatching(`[A-Za-z0-9]{8,20}`).Draw(rt, "key")
		pw := "P" + rapid.StringMatching(`[A-Za-z0-9!#%]{8,20}`).Draw(rt, "pw")
		secrets = append(secrets, key, pw)
		id, err := h.start(secretFlow, map[string]any{"api_key": key})
		if err != nil {
			rt.Fatal(err)
		}
		h.wait(id)
		if _, err := h.eng.Continue(context.Background(), h.pause(id).Token, pw); err != nil {
			rt.Fatal(err)
		}
		r := h.wait(id)
		if r.Status != store.StatusSucceeded {
			rt.Fatalf("status %s %s", r.Status, r.Error)
		}
		// Both outputs are computed from secrets: stored sealed.
		if out := string(r.Outputs); strings.Contains(out, "key=") || strings.Count(out, `"sealed:`) != 2 {
			rt.Fatalf("outputs not sealed: %s", out)
		}
		evs, _ := h.store.Events(context.Background(), id, 0, 0)
		for _, e := range evs {
			seen.Write(e.Data)
		}
		seen.Write(r.Outputs)
		seen.Write(r.Error)
		steps, _ := h.store.Steps(context.Background(), id)
		for _, st := range steps {
			seen.Write(st.Output)
			seen.Write(st.Answer)
			seen.WriteString(st.Error)
		}
	})
	h.close() // every page is in the database and WAL files now
	for _, f := range []string{h.path, h.path + "-wal"} {
		if b, err := os.ReadFile(f); err == nil {
			seen.Write(b)
		}
	}
	if seen.Len() == 0 {
		t.Fatal("nothing was scanned")
	}
	for _, s := range secrets {
		if bytes.Contains(seen.Bytes(), []byte(s)) {
			t.Fatalf("secret %q found in clear", s)
		}
	}
}
