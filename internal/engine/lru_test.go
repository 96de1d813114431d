package engine

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"stepwise.dev/stepwise/internal/store"
	"stepwise.dev/stepwise/internal/workflow"
)

// TestLRUKeepsTheMostRecentlyUsed checks the cache against a model: after
// any sequence of gets and adds it holds exactly the limit keys used last,
// each with the value last added.
func TestLRUKeepsTheMostRecentlyUsed(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		limit := rapid.IntRange(1, 5).Draw(t, "limit")
		c := newLRU[int](limit)
		var recent []string // the model: keys, the most recently used first
		values := map[string]int{}
		use := func(k string) {
			recent = slices.DeleteFunc(recent, func(x string) bool { return x == k })
			recent = append([]string{k}, recent...)
		}
		for i := range rapid.IntRange(0, 60).Draw(t, "ops") {
			k := fmt.Sprintf("k%d", rapid.IntRange(0, 7).Draw(t, "key"))
			if rapid.Bool().Draw(t, "add") {
				c.Add(k, i)
				values[k] = i
				use(k)
				if len(recent) > limit {
					delete(values, recent[limit])
					recent = recent[:limit]
				}
				continue
			}
			v, ok := c.Get(k)
			want, kept := values[k]
			if ok != kept || (ok && v != want) {
				t.Fatalf("get %s = %d, %v; the model has %d, %v", k, v, ok, want, kept)
			}
			if ok {
				use(k)
			}
		}
		if c.Len() != len(recent) {
			t.Fatalf("%d entries, the model %d", c.Len(), len(recent))
		}
		for _, k := range recent {
			if v, ok := c.Get(k); !ok || v != values[k] {
				t.Fatalf("%s: %d, %v; want %d", k, v, ok, values[k])
			}
		}
	})
}

// TestDefinitionsKeptAreBounded: a server that sees many versions keeps
// only the most recently used parsed, and a run of a version that fell out
// goes on, its definition parsed again from the store.
func TestDefinitionsKeptAreBounded(t *testing.T) {
	defer func(n int) { maxDefinitions = n }(maxDefinitions)
	maxDefinitions = 2
	h := newHarness(t)
	ctx := context.Background()
	id, err := h.start(questionFlow, nil)
	if err != nil {
		t.Fatal(err)
	}
	run := h.wait(id)
	if run.Status != store.StatusWaiting {
		t.Fatalf("run %s", run.Status)
	}
	for _, name := range []string{"other-one", "other-two"} {
		other, err := h.start("version: 1\nname: "+name+"\nsteps:\n  - {id: a, uses: noop}\n", nil)
		if err != nil {
			t.Fatal(err)
		}
		if r := h.wait(other); r.Status != store.StatusSucceeded {
			t.Fatalf("%s: %s", name, r.Status)
		}
	}
	n := h.eng.defs.Len()
	_, kept := h.eng.defs.Peek(run.Version)
	if n != 2 || kept {
		t.Fatalf("%d definitions kept, the first version among them: %v", n, kept)
	}
	if _, err := h.eng.Continue(ctx, h.pause(id).Token, "Alice"); err != nil {
		t.Fatal(err)
	}
	if r := h.wait(id); r.Status != store.StatusSucceeded {
		t.Fatalf("run after its definition fell out: %s", r.Status)
	}
	wf, err := h.eng.definition(ctx, run.Version)
	if err != nil || wf.Name != "greet" {
		t.Fatalf("definition parsed again: %v, %v", wf, err)
	}
}

// The spawn cache keeps at most its bound of versions however many are
// asked about, the most recently used.
func TestSpawnsAreBounded(t *testing.T) {
	defer spawns.Resize(maxSpawns)
	spawns.Purge()
	spawns.Resize(2)
	h := newHarness(t)
	ctx := context.Background()
	var versions []string
	for _, name := range []string{"one", "two", "three"} {
		id, err := h.start("version: 1\nname: "+name+"\nsteps:\n  - {id: a, uses: noop}\n", nil)
		if err != nil {
			t.Fatal(err)
		}
		r := h.wait(id)
		versions = append(versions, r.Version)
		if h.eng.MayHaveChildren(ctx, r.Version) {
			t.Fatalf("%s has no sub-workflow step", name)
		}
	}
	if n := spawns.Len(); n != 2 {
		t.Fatalf("%d versions kept, want the bound 2", n)
	}
	if spawns.Contains(versions[0]) {
		t.Fatal("the least recently used version is still kept")
	}
}

// The warm states kept stay at maxWarm however many runs stop at a pause,
// the most recently kept.
func TestWarmRunsAreBounded(t *testing.T) {
	var e Engine
	for i := range maxWarm + 10 {
		e.keep(&runState{wf: &workflow.Workflow{}, run: store.Run{ID: fmt.Sprintf("run-%d", i), Status: store.StatusWaiting}})
	}
	if n := e.warm.m.Len(); n != maxWarm {
		t.Fatalf("%d states kept, want the bound %d", n, maxWarm)
	}
	if e.warm.m.Contains("run-0") || !e.warm.m.Contains(fmt.Sprintf("run-%d", maxWarm+9)) {
		t.Fatal("not the most recently kept")
	}
}
