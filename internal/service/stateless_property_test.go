package service

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"stepwise.dev/stepwise/internal/engine"
	"stepwise.dev/stepwise/internal/store"
)

// genFlow draws a question flow: questions of several types, some with
// defaults, some asked only when an earlier answer says so, transforms
// that use the answers, outputs of everything.
func genFlow(t *rapid.T) string {
	n := rapid.IntRange(1, 6).Draw(t, "questions")
	var b strings.Builder
	b.WriteString("version: 1\nname: flow\nsteps:\n")
	var outs []string
	bools := []int{}
	for i := 0; i < n; i++ {
		typ := rapid.SampledFrom([]string{"string", "number", "boolean"}).Draw(t, fmt.Sprintf("type%d", i))
		fmt.Fprintf(&b, "  - id: q%d\n", i)
		if i == 0 {
			b.WriteString("    max_visits: 3\n") // a loop may come back here
		}
		if len(bools) > 0 && rapid.Bool().Draw(t, fmt.Sprintf("cond%d", i)) {
			c := rapid.SampledFrom(bools).Draw(t, fmt.Sprintf("condOn%d", i))
			fmt.Fprintf(&b, "    if: \"${{ steps.q%d.status == 'succeeded' && steps.q%d.answer }}\"\n", c, c)
		}
		fmt.Fprintf(&b, "    ask: {prompt: \"Question %d (%s)?\", type: %s", i, typ, typ)
		if rapid.Bool().Draw(t, fmt.Sprintf("default%d", i)) {
			fmt.Fprintf(&b, ", default: %s", map[string]string{"string": "dflt", "number": "7", "boolean": "true"}[typ])
		}
		b.WriteString("}\n")
		if typ == "boolean" {
			bools = append(bools, i)
		}
		if rapid.Bool().Draw(t, fmt.Sprintf("derive%d", i)) {
			fmt.Fprintf(&b, "  - {id: d%d, uses: transform, with: {value: \"${{ string(steps.q%d.answer) + '!' }}\"}, if: \"${{ steps.q%d.status == 'succeeded' }}\"}\n", i, i, i)
		}
		outs = append(outs, fmt.Sprintf("  a%d: \"${{ steps.q%d.status == 'succeeded' ? steps.q%d.answer : 'skipped' }}\"\n", i, i, i))
	}
	if rapid.Bool().Draw(t, "loop") {
		// Going round again: the questions offer the answers given last
		// time (Previous), from the records the state carries.
		b.WriteString("  - {id: again, ask: {prompt: \"Again?\", type: boolean}}\n")
		b.WriteString("  - id: loop\n    switch:\n      - {if: \"${{ steps.again.answer }}\", goto: q0}\n")
	}
	b.WriteString("outputs:\n")
	for _, o := range outs {
		b.WriteString(o)
	}
	return b.String()
}

// drawAnswer draws an answer for a question of typ: a valid value, none
// (the default, or a refusal when there is none) or one of another type.
func drawAnswer(t *rapid.T, typ string, i int) any {
	switch rapid.IntRange(0, 9).Draw(t, fmt.Sprintf("kind%d", i)) {
	case 0:
		return nil
	case 1:
		return map[string]any{"not": "a value"}
	}
	switch typ {
	case "number":
		return rapid.IntRange(-5, 5).Draw(t, fmt.Sprintf("num%d", i))
	case "boolean":
		return rapid.Bool().Draw(t, fmt.Sprintf("bool%d", i))
	}
	return rapid.StringMatching(`[a-z]{0,6}`).Draw(t, fmt.Sprintf("str%d", i))
}

// stepShape is what the comparison keeps of a step: not its times.
type stepShape struct {
	ID, Key, Status, Error string
	Visit                  int
	Output, Answer         any
}

func shapes(v *RunView) []stepShape {
	var out []stepShape
	for _, s := range v.Steps {
		out = append(out, stepShape{ID: s.ID, Key: s.Key, Status: s.Status, Error: s.Error, Visit: s.Visit, Output: s.Output, Answer: s.Answer})
	}
	return out
}

func requestJSON(p *engine.Pause) string {
	if p == nil {
		return "none"
	}
	b, _ := json.Marshal(p.Request)
	return string(b)
}

// Property: for random question flows and answer sequences, continuing a
// run from its states gives the same pauses, refusals, outputs and
// history as continuing the stored run.
func TestStatelessSameAsStored(t *testing.T) {
	ctx := context.Background()
	stored := openWith(t, Options{})
	sl := openStateless(t, testKeyA)
	const wait = 10 * time.Second
	rapid.Check(t, func(rt *rapid.T) {
		def := genFlow(rt)
		l, err := stored.Parse([]byte(def))
		if err != nil {
			rt.Fatalf("%v\n%s", err, def)
		}
		id, err := stored.StartRun(ctx, l, nil, false)
		if err != nil {
			rt.Fatal(err)
		}
		view := func() *RunView {
			if _, err := stored.Wait(ctx, id, wait); err != nil {
				rt.Fatal(err)
			}
			v, err := stored.GetRun(ctx, id)
			if err != nil {
				rt.Fatal(err)
			}
			return v
		}
		sv := view()
		res, err := sl.StartStateless(ctx, mustParse(t, sl, def), nil, wait)
		if err != nil {
			rt.Fatal(err)
		}
		for i := 0; ; i++ {
			if sv.Status != res.View.Status || requestJSON(sv.Pause) != requestJSON(res.View.Pause) {
				rt.Fatalf("step %d: stored %s %s, stateless %s %s", i, sv.Status, requestJSON(sv.Pause), res.View.Status, requestJSON(res.View.Pause))
			}
			if sv.Pause == nil {
				break
			}
			if i > 30 {
				rt.Fatal("too many pauses")
			}
			v := drawAnswer(rt, sv.Pause.Type, i)
			_, errStored := stored.ContinueFromAgent(ctx, sv.Pause.Token, v)
			next, errState := sl.ContinueStateless(ctx, res.State, res.View.Pause.Token, v, wait)
			if engine.CodeOf(errStored) != engine.CodeOf(errState) || (errStored == nil) != (errState == nil) {
				rt.Fatalf("answer %v: stored %v, stateless %v", v, errStored, errState)
			}
			if errStored != nil {
				continue // refused alike: the same pause stands, the same state
			}
			sv, res = view(), next
		}
		// The whole history, as the state holds it.
		c, p, err := sl.openCall(res.State)
		if err != nil {
			rt.Fatal(err)
		}
		full, err := c.GetRun(ctx, p.RunID)
		c.close()
		if err != nil {
			rt.Fatal(err)
		}
		if !reflect.DeepEqual(sv.Outputs, full.Outputs) || sv.Status != store.StatusSucceeded && sv.Status != store.StatusFailed {
			rt.Fatalf("outputs: stored %s %v, stateless %s %v", sv.Status, sv.Outputs, full.Status, full.Outputs)
		}
		if a, b := shapes(sv), shapes(full); !reflect.DeepEqual(a, b) {
			rt.Fatalf("history:\nstored    %+v\nstateless %+v", a, b)
		}
	})
}
