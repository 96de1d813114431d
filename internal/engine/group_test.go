package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"stepwise.dev/stepwise/internal/action"
	"stepwise.dev/stepwise/internal/store"
)

// barrier blocks until `n` callers are inside at once: it can only succeed
// when its callers run concurrently.
type barrier struct {
	mu      sync.Mutex
	waiting int
	release chan struct{}
}

func (b *barrier) Name() string        { return "barrier" }
func (b *barrier) Description() string { return "" }
func (b *barrier) Safety() string      { return action.ReadOnly }
func (b *barrier) Run(ctx context.Context, c action.Call) (any, error) {
	n := int(c.Input["n"].(float64))
	b.mu.Lock()
	if b.release == nil {
		b.release = make(chan struct{})
	}
	b.waiting++
	rel := b.release
	if b.waiting == n {
		close(rel)
	}
	b.mu.Unlock()
	select {
	case <-rel:
		return map[string]any{"ok": c.Input["name"]}, nil
	case <-time.After(5 * time.Second):
		return nil, errors.New("the other branches never arrived: not concurrent")
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func TestParallelRunsBranchesConcurrently(t *testing.T) {
	h := newHarness(t)
	withAction(h, &barrier{})
	doc := `version: 1
name: par
steps:
  - id: group
    parallel:
      - {id: left, uses: barrier, with: {n: 3, name: l}}
      - {id: middle, uses: barrier, with: {n: 3, name: m}}
      - {id: right, uses: barrier, with: {n: 3, name: r}}
  - id: after
    uses: transform
    with: {value: "${{ steps.left.output.ok }}${{ steps.right.output.ok }}"}
outputs:
  joined: ${{ steps.after.output }}
  group: ${{ steps.group.output }}
`
	id, err := h.start(doc, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := h.wait(id)
	if r.Status != store.StatusSucceeded {
		t.Fatalf("%s %s", r.Status, r.Error)
	}
	out := outputs(t, r)
	if out["joined"] != "lr" {
		t.Errorf("outputs %v", out)
	}
	if g, _ := out["group"].(map[string]any); len(g) != 3 {
		t.Errorf("group output %v", out["group"])
	}
}

// counter counts calls per item and can fail one item.
type counter struct {
	calls atomic.Int64
	ok    atomic.Int64 // calls that completed successfully
	inFly atomic.Int64
	peak  atomic.Int64
}

func (c *counter) Name() string        { return "count" }
func (c *counter) Description() string { return "" }
func (c *counter) Safety() string      { return action.ReadOnly }
func (c *counter) Run(ctx context.Context, call action.Call) (any, error) {
	c.calls.Add(1)
	n := c.inFly.Add(1)
	defer c.inFly.Add(-1)
	for {
		p := c.peak.Load()
		if n <= p || c.peak.CompareAndSwap(p, n) {
			break
		}
	}
	if d, ok := call.Input["sleep_ms"].(float64); ok {
		select {
		case <-time.After(time.Duration(d) * time.Millisecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if call.Input["fail"] == true {
		return nil, &action.Error{Err: errors.New("item refused")}
	}
	c.ok.Add(1)
	return map[string]any{"item": call.Input["item"]}, nil
}

func TestForeachCollectsInOrderWithBoundedConcurrency(t *testing.T) {
	h := newHarness(t)
	c := &counter{}
	withAction(h, c)
	doc := `version: 1
name: loop
steps:
  - id: each
    foreach: ${{ [5, 4, 3, 2, 1, 0] }}
    concurrency: 2
    steps:
      - id: work
        uses: count
        with: {item: "${{ item }}", sleep_ms: "${{ item * 5 }}"}
      - id: label
        uses: transform
        with: {value: "${{ index }}:${{ steps.work.output.item }}"}
outputs:
  labels: ${{ steps.each.output }}
`
	id, err := h.start(doc, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := h.wait(id)
	if r.Status != store.StatusSucceeded {
		t.Fatalf("%s %s", r.Status, r.Error)
	}
	labels, _ := outputs(t, r)["labels"].([]any)
	want := []string{"0:5", "1:4", "2:3", "3:2", "4:1", "5:0"}
	if len(labels) != len(want) {
		t.Fatalf("labels %v", labels)
	}
	for i, w := range want {
		if labels[i] != w {
			t.Fatalf("labels %v, want %v", labels, want)
		}
	}
	if p := c.peak.Load(); p > 2 {
		t.Errorf("%d items ran at once, concurrency is 2", p)
	}
}

func TestForeachFailureFailsTheGroupUnlessContinueOnError(t *testing.T) {
	h := newHarness(t)
	withAction(h, &counter{})
	doc := `version: 1
name: failing
inputs:
  tolerate: {type: boolean}
steps:
  - id: each
    foreach: ${{ [1, 2, 3] }}
    steps:
      - id: work
        uses: count
        with: {fail: "${{ item == 2 }}"}
        continue_on_error: ${{ false }}
outputs:
  n: ${{ len(steps.each.output) }}
`
	// continue_on_error is a boolean: make two documents.
	strict := strings.Replace(doc, "        continue_on_error: ${{ false }}\n", "", 1)
	lenient := strings.Replace(doc, "        continue_on_error: ${{ false }}\n", "        continue_on_error: true\n", 1)
	id, err := h.start(strict, map[string]any{"tolerate": false})
	if err != nil {
		t.Fatal(err)
	}
	if r := h.wait(id); r.Status != store.StatusFailed || !strings.Contains(string(r.Error), "item 1: step work failed: item refused") {
		t.Fatalf("strict: %s %s", r.Status, r.Error)
	}
	id, err = h.start(lenient, map[string]any{"tolerate": true})
	if err != nil {
		t.Fatal(err)
	}
	if r := h.wait(id); r.Status != store.StatusSucceeded || outputs(t, r)["n"] != 3.0 {
		t.Fatalf("lenient: %s %s %s", r.Status, r.Error, r.Outputs)
	}
}

func TestForeachResumesOnlyMissingItems(t *testing.T) {
	h := newHarness(t)
	c := &counter{}
	withAction(h, c)
	doc := `version: 1
name: resumable
steps:
  - id: each
    foreach: '${{ map(1..20, #) }}'
    concurrency: 4
    steps:
      - id: work
        uses: count
        with: {item: "${{ item }}", sleep_ms: 40}
outputs:
  n: ${{ len(steps.each.output) }}
`
	id, err := h.start(doc, nil)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return c.calls.Load() >= 6 })
	h.eng.grace = 1
	h.close()
	before := c.calls.Load()
	h.open()
	withAction(h, c)
	if _, err := h.eng.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	r := h.wait(id)
	if r.Status != store.StatusSucceeded || outputs(t, r)["n"] != 20.0 {
		t.Fatalf("%s %s %s", r.Status, r.Error, r.Outputs)
	}
	steps, _ := h.store.Steps(context.Background(), id)
	work := map[string]int{}
	for _, st := range steps {
		if st.StepID == "work" {
			work[st.Key]++
		}
	}
	if len(work) != 20 {
		t.Fatalf("%d item rows", len(work))
	}
	for k, n := range work {
		if n != 1 {
			t.Fatalf("item %s recorded %d times", k, n)
		}
	}
	// Only items whose result was not recorded ran again: at most the
	// ones in flight at the restart (concurrency 4).
	if total := c.ok.Load(); total > 20+4 || total < 20 {
		t.Errorf("%d completed calls in all (%d calls before the restart)", total, before)
	}
}

// TestLargeForeach: 10,000 items with concurrency 16 complete, and memory
// stays bounded (the peak RSS of the test process is logged).
func TestLargeForeach(t *testing.T) {
	if testing.Short() {
		t.Skip("10,000 commits")
	}
	h := newHarness(t)
	doc := `version: 1
name: big-loop
steps:
  - id: each
    foreach: '${{ map(1..10000, #) }}'
    concurrency: 16
    steps:
      - {id: work, uses: noop}
outputs:
  n: ${{ len(steps.each.output) }}
`
	id, err := h.start(doc, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if _, err := h.eng.Wait(ctx, id); err != nil {
		t.Fatal(err)
	}
	r, _ := h.store.GetRun(ctx, id)
	if r.Status != store.StatusSucceeded || outputs(t, r)["n"] != 10000.0 {
		t.Fatalf("%s %s", r.Status, r.Error)
	}
	if status, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, line := range strings.Split(string(status), "\n") {
			if strings.HasPrefix(line, "VmHWM") {
				t.Logf("peak RSS of the test process: %s", strings.TrimSpace(strings.TrimPrefix(line, "VmHWM:")))
			}
		}
	}
}

func TestQuestionsInsideAForeach(t *testing.T) {
	h := newHarness(t)
	doc := `version: 1
name: per-host
steps:
  - id: each
    foreach: ${{ ["web", "db", "cache"] }}
    concurrency: 2
    steps:
      - id: size
        ask: {prompt: "Size of ${{ item }}?", type: choice, choices: [s, m, l]}
      - id: label
        uses: transform
        with: {value: "${{ item }}=${{ steps.size.answer }}"}
  - id: review
    parallel:
      - id: ok
        agent:
          instructions: Check the sizes ${{ steps.each.output }}.
          output_schema: {type: object, required: [fine], properties: {fine: {type: boolean}}}
      - {id: note, uses: noop}
outputs:
  sizes: ${{ steps.each.output }}
  fine: ${{ steps.ok.output.fine }}
`
	id, err := h.start(doc, nil)
	if err != nil {
		t.Fatal(err)
	}
	answers := map[string]string{"web": "m", "db": "l", "cache": "s"}
	for round := 0; round < 3; round++ {
		h.wait(id)
		ps, err := h.eng.Pauses(context.Background(), id)
		if err != nil || len(ps) == 0 {
			t.Fatalf("round %d: pauses %v %v", round, ps, err)
		}
		p := ps[0]
		host := strings.TrimSuffix(strings.TrimPrefix(p.Prompt, "Size of "), "?")
		if _, err := h.eng.Continue(context.Background(), p.Token, answers[host]); err != nil {
			t.Fatalf("continue %s: %v", host, err)
		}
	}
	h.wait(id)
	ps, _ := h.eng.Pauses(context.Background(), id)
	if len(ps) != 1 || ps[0].Kind != KindAgent {
		t.Fatalf("want the agent's pause, got %+v", ps)
	}
	if !strings.Contains(ps[0].Instructions, "web=m") {
		t.Fatalf("instructions %q", ps[0].Instructions)
	}
	if _, err := h.eng.Continue(context.Background(), ps[0].Token, map[string]any{"fine": true}); err != nil {
		t.Fatal(err)
	}
	r := h.wait(id)
	if r.Status != store.StatusSucceeded {
		t.Fatalf("%s %s", r.Status, r.Error)
	}
	out := outputs(t, r)
	sizes, _ := out["sizes"].([]any)
	if len(sizes) != 3 || sizes[0] != "web=m" || sizes[1] != "db=l" || sizes[2] != "cache=s" || out["fine"] != true {
		t.Fatalf("outputs %v", out)
	}
}

func TestSleepInsideAForeach(t *testing.T) {
	h := newHarness(t)
	doc := `version: 1
name: staggered
steps:
  - id: each
    foreach: ${{ [1, 2, 3] }}
    concurrency: 3
    steps:
      - id: nap
        sleep: "${{ string(item * 100) + 'ms' }}"
      - id: done
        uses: transform
        with: {value: "${{ item }}"}
outputs:
  order: ${{ steps.each.output }}
`
	id, err := h.start(doc, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := h.wait(id)
	if r.Status != store.StatusSucceeded {
		t.Fatalf("%s %s", r.Status, r.Error)
	}
	if got := outputs(t, r)["order"]; fmt.Sprint(got) != "[1 2 3]" {
		t.Fatalf("order %v", got)
	}
	if ts, _ := h.store.Timers(context.Background(), id); len(ts) != 0 {
		t.Fatalf("timers left %+v", ts)
	}
}

func TestLoopInsideAForeachBody(t *testing.T) {
	h := newHarness(t)
	j := &journal{}
	withAction(h, j)
	doc := `version: 1
name: item-loops
steps:
  - id: each
    foreach: ${{ ["a", "b"] }}
    steps:
      - id: try
        uses: record
        with: {name: "${{ item }}"}
        max_visits: 3
      - id: again
        switch:
          - if: ${{ steps.try.output.name == "a" && len(steps) > 0 && index == 0 }}
            goto: count
      - id: done
        uses: transform
        with: {value: "${{ item }} done"}
      - id: stop
        switch:
          - goto: finish
      - id: count
        uses: record
        with: {name: "loop-${{ item }}"}
        max_visits: 2
      - id: back
        switch:
          - goto: try
      - id: finish
        uses: transform
        with: {value: "${{ item }} finished"}
outputs:
  items: ${{ steps.each.output }}
`
	id, err := h.start(doc, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := h.wait(id)
	// Item a loops until count exceeds max_visits (2), then the item fails.
	if r.Status != store.StatusFailed || !strings.Contains(string(r.Error), "item 0: step count would run for the 3. time") {
		t.Fatalf("%s %s", r.Status, r.Error)
	}
	if got := j.String(); !strings.HasPrefix(got, "a loop-a a loop-a a") {
		t.Fatalf("journal %q", got)
	}
	rows, _ := h.store.Steps(context.Background(), id)
	visits := map[string]int{}
	for _, st := range rows {
		if st.Key == "each[0].try" {
			visits[st.Key] = max(visits[st.Key], st.Visit)
		}
	}
	if visits["each[0].try"] != 3 {
		t.Fatalf("try visits %v", visits)
	}
}

func TestCancelClosesEveryPause(t *testing.T) {
	h := newHarness(t)
	doc := `version: 1
name: many-questions
steps:
  - id: each
    foreach: ${{ [1, 2, 3] }}
    concurrency: 3
    steps:
      - {id: q, ask: {prompt: "Item ${{ item }}?", type: boolean}}
`
	id, err := h.start(doc, nil)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		ps, _ := h.store.OpenPauses(context.Background(), id)
		return len(ps) == 3
	})
	if err := h.eng.Cancel(context.Background(), id, "", false); err != nil {
		t.Fatal(err)
	}
	if ps, _ := h.store.OpenPauses(context.Background(), id); len(ps) != 0 {
		t.Fatalf("%d pauses left open", len(ps))
	}
	if r := h.wait(id); r.Status != store.StatusCanceled {
		t.Fatalf("status %s", r.Status)
	}
}

// TestRetriesInsideAGroupAreDurable: a failing attempt inside a foreach
// waits for its backoff on a durable wake-up, and the attempts are counted
// across a restart.
func TestRetriesInsideAGroupAreDurable(t *testing.T) {
	synctest.Test(t, testRetriesInsideAGroupAreDurable) // its waits pass on the bubble's clock, at once
}

func testRetriesInsideAGroupAreDurable(t *testing.T) {
	h := newHarness(t)
	f := &flaky{calls: map[string]int{}}
	withAction(h, f)
	doc := `version: 1
name: nested-retries
steps:
  - id: each
    foreach: ${{ [1, 2] }}
    concurrency: 2
    steps:
      - id: call
        uses: flaky
        with: {fails: 2}
        retry: {attempts: 3, backoff: 300ms, max_backoff: 300ms}
outputs:
  calls: ${{ map(steps.each.output, .calls) }}
`
	id, err := h.start(doc, nil)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		atts, _ := h.store.Attempts(context.Background(), id)
		return len(atts) >= 2
	})
	// Restart while the retries wait.
	h.close()
	h.open()
	withAction(h, f)
	if _, err := h.eng.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	r := h.wait(id)
	if r.Status != store.StatusSucceeded {
		t.Fatalf("%s %s", r.Status, r.Error)
	}
	if got := fmt.Sprint(outputs(t, r)["calls"]); got != "[3 3]" {
		t.Fatalf("calls %s", got)
	}
	atts, _ := h.store.Attempts(context.Background(), id)
	failed := 0
	for _, a := range atts {
		if a.Status == "failed" {
			failed++
		}
	}
	if failed != 4 {
		t.Fatalf("%d failed attempts recorded, want 4", failed)
	}
	if ts, _ := h.store.Timers(context.Background(), id); len(ts) != 0 {
		t.Fatalf("timers left %+v", ts)
	}
}

// TestParkedGroupAnnouncesWaiting: when every branch of a group waits for
// an answer, the run's change to waiting is published as an event with that
// status (the branches' own pauses are published while the run is still
// running), so that watchers need not poll for it.
func TestParkedGroupAnnouncesWaiting(t *testing.T) {
	h := newHarness(t)
	doc := `version: 1
name: grouped
steps:
  - id: both
    parallel:
      - id: color
        ask: {prompt: "Color?", type: string}
      - id: size
        ask: {prompt: "Size?", type: string}
`
	events, stop := h.eng.Subscribe("")
	defer stop()
	id, err := h.start(doc, nil)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.After(10 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.RunID != id || ev.Status != store.StatusWaiting {
				continue
			}
			if ev.Type != EventRunPaused || ev.StepID != "both" || ev.Seq == 0 {
				t.Fatalf("the waiting status came with %+v", ev)
			}
			return
		case <-deadline:
			t.Fatal("no event said the run waits")
		}
	}
}
