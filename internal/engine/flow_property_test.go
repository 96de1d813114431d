package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"stepwise.dev/stepwise/internal/store"
)

// TestDeferredOperationsProperties: on_success hooks run in registration
// order; when one fails, the ones before it are rolled back (their
// compensations) in reverse order, then the steps' compensations, then
// on_failure; a canceled run never runs them.
func TestDeferredOperationsProperties(t *testing.T) {
	h := newHarness(t)
	j := &journal{}
	withAction(h, j)
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(1, 6).Draw(rt, "hooks")
		failAt := rapid.IntRange(-1, n-1).Draw(rt, "fail_at") // -1: none fails
		cancel := rapid.Bool().Draw(rt, "cancel")
		var b strings.Builder
		b.WriteString("version: 1\nname: deferred\nsteps:\n")
		b.WriteString("  - id: s\n    uses: record\n    with: {name: s}\n    compensate: {uses: record, with: {name: undo-s}}\n")
		if cancel {
			b.WriteString("  - id: gate\n    ask: {prompt: 'Go?', type: boolean}\n")
		}
		b.WriteString("on_success:\n")
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, "  - uses: record\n    with: {name: h%d, fail: %v}\n    compensate: {uses: record, with: {name: undo-h%d}}\n", i, i == failAt, i)
		}
		b.WriteString("on_failure:\n  - uses: record\n    with: {name: f}\n")
		j.mu.Lock()
		j.log = nil
		j.mu.Unlock()
		id, err := h.start(b.String(), nil)
		if err != nil {
			rt.Fatal(err)
		}
		r := h.wait(id)
		var want []string
		want = append(want, "s")
		if cancel {
			if r.Status != store.StatusWaiting {
				rt.Fatalf("status %s", r.Status)
			}
			if err := h.eng.Cancel(context.Background(), id, "", false); err != nil {
				rt.Fatal(err)
			}
			r = h.wait(id)
			if r.Status != store.StatusCanceled || j.String() != "s" {
				rt.Fatalf("canceled run: %s, journal %q", r.Status, j)
			}
			return
		}
		if failAt < 0 {
			for i := 0; i < n; i++ {
				want = append(want, fmt.Sprintf("h%d", i))
			}
		} else {
			for i := 0; i < failAt; i++ {
				want = append(want, fmt.Sprintf("h%d", i))
			}
			want = append(want, fmt.Sprintf("h%d!", failAt))
			for i := failAt - 1; i >= 0; i-- {
				want = append(want, fmt.Sprintf("undo-h%d", i))
			}
			want = append(want, "undo-s", "f")
		}
		if got := j.String(); got != strings.Join(want, " ") {
			rt.Fatalf("journal %q, want %q", got, strings.Join(want, " "))
		}
		wantStatus := store.StatusSucceeded
		if failAt >= 0 {
			wantStatus = store.StatusFailed
		}
		if r.Status != wantStatus {
			rt.Fatalf("status %s, want %s", r.Status, wantStatus)
		}
	})
}

// TestLevelStackProperties: entering a sub-workflow adds one level,
// returning removes it (the parent goes on at its own level), and a pause
// at the deepest level is the top run's pause: continuing it continues the
// child and every parent finishes.
func TestLevelStackProperties(t *testing.T) {
	h := newHarness(t)
	rapid.Check(t, func(rt *rapid.T) {
		depth := rapid.IntRange(1, 5).Draw(rt, "depth")
		ask := rapid.Bool().Draw(rt, "ask")
		docs := map[string]string{}
		for d := 0; d <= depth; d++ {
			var b strings.Builder
			fmt.Fprintf(&b, "version: 1\nname: level%d\nsteps:\n", d)
			if d < depth {
				fmt.Fprintf(&b, "  - {id: down, workflow: level%d}\n  - id: after\n    uses: transform\n    with: {value: '${{ steps.down.output.v + 1 }}'}\noutputs:\n  v: ${{ steps.after.output }}\n", d+1)
			} else if ask {
				b.WriteString("  - id: q\n    ask: {prompt: 'Number?', type: integer}\noutputs:\n  v: ${{ steps.q.answer }}\n")
			} else {
				b.WriteString("  - {id: leaf, uses: transform, with: {value: 0}}\noutputs:\n  v: ${{ steps.leaf.output }}\n")
			}
			docs[fmt.Sprintf("level%d", d)] = b.String()
		}
		library(t, h, docs)
		id, err := h.start(docs["level0"], nil)
		if err != nil {
			rt.Fatal(err)
		}
		base := 0
		if ask {
			waitFor(t, func() bool {
				r, _ := h.store.GetRun(context.Background(), id)
				return r.Status == store.StatusWaiting
			})
			p := h.pause(id)
			if p.RunID == id || p.StepID != "q" {
				rt.Fatalf("pause %+v", p)
			}
			base = rapid.IntRange(0, 100).Draw(rt, "answer")
			if _, err := h.eng.Continue(context.Background(), p.Token, int64(base)); err != nil {
				rt.Fatal(err)
			}
		}
		r := h.wait(id)
		if r.Status != store.StatusSucceeded || outputs(t, r)["v"] != float64(base+depth) {
			rt.Fatalf("top run %s %s %s (depth %d)", r.Status, r.Error, r.Outputs, depth)
		}
		// Each child is one level below its parent.
		level := map[string]int{id: 0}
		queue := []string{id}
		seen := 0
		for len(queue) > 0 {
			parent := queue[0]
			queue = queue[1:]
			kids, _, _ := h.store.ListRuns(context.Background(), store.RunFilter{ParentID: parent})
			for _, k := range kids {
				var st State
				_ = json.Unmarshal(k.State, &st)
				if st.Depth != level[parent]+1 {
					rt.Fatalf("child %s at depth %d under a parent at %d", k.Workflow, st.Depth, level[parent])
				}
				level[k.ID] = st.Depth
				queue = append(queue, k.ID)
				seen++
			}
		}
		if seen != depth {
			rt.Fatalf("%d child runs for depth %d", seen, depth)
		}
	})
}
