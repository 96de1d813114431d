package engine

import (
	"context"
	"sync"
	"testing"

	"stepwise.dev/stepwise/store"
)

const reviewLoop = `version: 1
name: loop
steps:
  - id: q
    max_visits: 1000
    ask: {prompt: "N?", type: integer}
  - id: t
    uses: transform
    with: {value: "${{ steps.q.answer }}"}
  - id: again
    switch:
      - if: ${{ steps.q.answer >= 0 }}
        goto: q
`

// Several Continues race for each pause of a loop (run with -race): one
// wins and its answer is stored, the others say "already used", and
// nothing touches a run state after handing it to the next loader (a
// Continue that committed its answer itself keeps the state for the
// driver, which another loader may take at once).
func TestReviewContinuesRaceForEachPause(t *testing.T) {
	h := newHarness(t)
	id, err := h.start(reviewLoop, nil)
	if err != nil {
		t.Fatal(err)
	}
	for round := range 30 {
		var p Pause
		waitFor(t, func() bool {
			ps, err := h.eng.Pauses(context.Background(), id)
			if err != nil || len(ps) != 1 {
				return false
			}
			p = ps[0]
			return true
		})
		const k = 4
		errs := make([]error, k)
		var wg sync.WaitGroup
		for i := range k {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = h.eng.Continue(context.Background(), p.Token, round*10+i)
			}()
		}
		wg.Wait()
		wins, winner := 0, -1
		for i, err := range errs {
			switch {
			case err == nil:
				wins, winner = wins+1, round*10+i
			case CodeOf(err) != CodeTokenAlreadyUsed:
				t.Fatalf("round %d: %v", round, err)
			}
		}
		if wins != 1 {
			t.Fatalf("round %d: %d Continues won", round, wins)
		}
		answers, err := h.store.Answers(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, a := range answers {
			if a.PauseSeq == p.Seq {
				n++
				if string(a.Value) != itoa(winner) {
					t.Fatalf("round %d: stored %s, the winner answered %d", round, a.Value, winner)
				}
			}
		}
		if n != 1 {
			t.Fatalf("round %d: %d answers stored", round, n)
		}
	}
	waitFor(t, func() bool {
		ps, _ := h.eng.Pauses(context.Background(), id)
		if len(ps) != 1 {
			return false
		}
		_, err := h.eng.Continue(context.Background(), ps[0].Token, -1)
		return err == nil
	})
	if r := h.wait(id); r.Status != store.StatusSucceeded {
		t.Fatalf("status %s", r.Status)
	}
	waitFor(t, func() bool {
		h.eng.mu.Lock()
		defer h.eng.mu.Unlock()
		return len(h.eng.active) == 0 && len(h.eng.sem) == 0
	})
}

func itoa(n int) string {
	if n < 0 {
		return "-" + itoa(-n)
	}
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}
