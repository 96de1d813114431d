package expr

import (
	"fmt"
	"math"
	"sync/atomic"
)

// DefaultMemoryLimit is the memory ceiling of one evaluation unless
// SetMemoryLimit says otherwise: 64 MiB.
const DefaultMemoryLimit int64 = 64 << 20

var memoryLimit atomic.Int64

func init() { memoryLimit.Store(DefaultMemoryLimit) }

// SetMemoryLimit sets the memory ceiling of every evaluation in the process
// (bytes; n <= 0 restores DefaultMemoryLimit) and returns the previous one.
// One evaluation is one Eval, Render or RenderValue call (and their Known
// variants): every string, list and map its expressions build is charged
// against the ceiling before it is allocated.
func SetMemoryLimit(n int64) int64 {
	if n <= 0 {
		n = DefaultMemoryLimit
	}
	return memoryLimit.Swap(n)
}

// MemoryLimit is the current memory ceiling of one evaluation, in bytes.
func MemoryLimit() int64 { return memoryLimit.Load() }

// MaxLoopSteps bounds the work of one evaluation's loops (map, filter,
// all, reduce, … over a list): a loop, when it starts, counts its
// predicate's syntax nodes once per element, so nested loops over big
// lists stop before they start (about a second or two of work at most)
// instead of running for hours.
const MaxLoopSteps = 50_000_000

var loopSteps int64 = MaxLoopSteps // a variable for tests

// BudgetError is an evaluation that would allocate more than its memory
// ceiling (refused before the allocation), or whose loops would run past
// MaxLoopSteps. The engine fails the step with the code EXPRESSION_BUDGET.
type BudgetError struct {
	// Limit is the ceiling: bytes, or loop steps when Steps is set.
	Limit int64
	// What names what would have been built (a builtin, "+", a range, the
	// result) or run (the loops).
	What string
	// Steps: the loops ran out of steps (not memory).
	Steps bool
}

func (e *BudgetError) Error() string {
	if e.Steps {
		return fmt.Sprintf("expression step budget exceeded: %s would take the evaluation past its limit of %d loop steps", e.What, e.Limit)
	}
	return fmt.Sprintf("expression memory budget exceeded: %s would take the evaluation past its limit of %s", e.What, byteSize(e.Limit))
}

func byteSize(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// budget is what one evaluation may still allocate. It is used by one
// goroutine at a time (one evaluation).
type budget struct {
	limit, used int64
	steps       int64 // loop steps taken
}

func newBudget() *budget { return &budget{limit: MemoryLimit()} }

// charge books n bytes, or refuses them (and books nothing) when they do
// not fit.
func (b *budget) charge(what string, n int64) error {
	if n < 0 || n > b.limit-b.used {
		return &BudgetError{Limit: b.limit, What: what}
	}
	b.used += n
	return nil
}

// step books n loop steps, or refuses them once MaxLoopSteps are taken.
func (b *budget) step(n int64) error {
	b.steps += n
	if b.steps > loopSteps {
		return &BudgetError{Limit: loopSteps, What: "the loops", Steps: true}
	}
	return nil
}

// remaining is what the budget still allows.
func (b *budget) remaining() int64 { return b.limit - b.used }

// mul multiplies sizes, saturating instead of overflowing.
func mul(a, b int64) int64 {
	if a <= 0 || b <= 0 {
		return 0
	}
	if a > math.MaxInt64/b {
		return math.MaxInt64
	}
	return a * b
}

// add adds sizes, saturating instead of overflowing.
func add(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
