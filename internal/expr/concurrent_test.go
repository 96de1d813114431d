package expr

import (
	"errors"
	"fmt"
	"sync"
	"testing"
)

// Evaluations running at once each have their own budget: one that blows
// up does not charge another, and results stay their own.
func TestConcurrentEvaluationsHaveTheirOwnBudget(t *testing.T) {
	t.Parallel()
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 50 {
				if i%2 == 0 {
					want := fmt.Sprintf("fsn1-%d-%d", i, j)
					v, err := Eval(fmt.Sprintf(`inputs.region + "-%d-" + string(%d)`, i, j), env)
					if err != nil || v != want {
						errs <- fmt.Errorf("got %v, %v; want %s", v, err, want)
						return
					}
					continue
				}
				_, err := Eval(`len(repeat(repeat("x", 100000), 100000))`, env)
				var be *BudgetError
				if !errors.As(err, &be) {
					errs <- fmt.Errorf("blow-up: %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
