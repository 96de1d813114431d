package expr

import (
	"errors"
	"runtime"
	"strings"
	"testing"
)

// shared builds a value whose written size is exponential in the memory it
// holds: every level lists the one below ten times.
const shared = `let a = [repeat("x", 10000)]; let b = [a,a,a,a,a,a,a,a,a,a]; let c = [b,b,b,b,b,b,b,b,b,b]; ` +
	`let d = [c,c,c,c,c,c,c,c,c,c]; let e = [d,d,d,d,d,d,d,d,d,d]; `

// sharedNumbers is shared with numbers: ten million of them.
const sharedNumbers = `let a = 1..1000; let b = [a,a,a,a,a,a,a,a,a,a]; let c = [b,b,b,b,b,b,b,b,b,b]; ` +
	`let d = [c,c,c,c,c,c,c,c,c,c]; let e = [d,d,d,d,d,d,d,d,d,d]; `

// blowUps are expressions that would each allocate past the default
// ceiling (64 MiB), several of them by orders of magnitude, one for every
// way an expression can build something big.
var blowUps = map[string]string{
	"replace":       `len(replace(repeat("a", 20000), "a", repeat("b", 20000)))`,
	"repeat":        `len(repeat(repeat("x", 10000), 10000))`,
	"string +":      `len(reduce(1..20000, #acc + "xxxxxxxxxx", ""))`,
	"string + let":  `let s = repeat("x", 10000000); len(s + s + s + s + s + s + s + s)`,
	"concat":        `let l = 1..1000000; len(concat(l, l, l, l, l))`,
	"join":          `let s = repeat("x", 10000000); len(join([s, s, s, s, s, s, s]))`,
	"split":         `len(split(repeat(",", 5000000), ","))`,
	"splitAfter":    `len(splitAfter(repeat(",", 5000000), ","))`,
	"toJSON":        shared + `len(toJSON(e))`,
	"string()":      shared + `len(string(e))`,
	"fromJSON":      `len(fromJSON("[" + repeat("[],", 2000000) + "[]]"))`,
	"upper":         `let s = repeat("a", 40000000); len(upper(s))`,
	"lower":         `let s = repeat("A", 40000000); len(lower(s))`,
	"toBase64":      `let s = repeat("x", 20000000); len(toBase64(s))`,
	"fromBase64":    `let s = toBase64(repeat("x", 12000000)); len(fromBase64(s))`,
	"range":         `len(1..1000000000)`,
	"map":           `len(map(1..2000000, #))`,
	"filter":        `len(filter(1..2000000, true))`,
	"groupBy":       `len(groupBy(1..1000000, #))`,
	"sortBy":        `len(sortBy(1..2000000, -#))`,
	"sort":          `let l = 1..4000000; len(sort(l))`,
	"reverse":       `let l = 1..4000000; len(reverse(l))`,
	"uniq":          `let l = 1..4000000; len(uniq(l))`,
	"keys":          `let m = fromPairs(map(1..100000, [string(#), #])); len(map(1..100, keys(m)))`,
	"values":        `let m = fromPairs(map(1..100000, [string(#), #])); len(map(1..100, values(m)))`,
	"toPairs":       `let m = fromPairs(map(1..100000, [string(#), #])); len(map(1..100, toPairs(m)))`,
	"fromPairs":     `let p = map(1..100000, [string(#), #]); len(map(1..100, fromPairs(p)))`,
	"flatten":       sharedNumbers + `len(flatten(e))`,
	"median":        sharedNumbers + `median(e)`,
	"nested map":    `let r = 1..3000; len(map(r, map(r, #)))`,
	"loop literal":  `len(map(1..200000, [#,#,#,#,#,#,#,#,#,#,#,#,#,#,#,#,#,#,#,#,#,#,#,#,#,#,#,#,#,#,#,#]))`,
	"matches":       `len(filter(1..1000, "a" matches repeat("a", 100000)))`,
	"method result": `len(map(1..20000, now().Format(repeat("2006", 1000))))`,
	"shared result": shared + `e`,
}

func TestEvalBudgetBoundsEveryBuiltin(t *testing.T) {
	// Not parallel: it measures the process's allocations.
	limit := MemoryLimit()
	for name, src := range blowUps {
		t.Run(name, func(t *testing.T) {
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			v, err := Eval(src, nil)
			runtime.ReadMemStats(&after)
			var be *BudgetError
			if !errors.As(err, &be) {
				t.Fatalf("Eval = %.40s…, %v; want a *BudgetError", Text(v), err)
			}
			if be.Limit != limit {
				t.Errorf("BudgetError.Limit = %d, want %d", be.Limit, limit)
			}
			if got := int64(after.TotalAlloc - before.TotalAlloc); got > limit+limit/2 && !raceEnabled {
				t.Errorf("the evaluation allocated %d MiB, past the ceiling of %d MiB and its slack", got>>20, limit>>20)
			}
		})
	}
}

// A template's expressions and the text they make share one budget.
func TestRenderSharesOneBudget(t *testing.T) {
	t.Parallel()
	big := `${{ repeat("x", 20000000) }}`
	_, err := Render(strings.Repeat(big+" ", 4), nil)
	var be *BudgetError
	if !errors.As(err, &be) {
		t.Fatalf("four 20 MB pieces of text: got %v, want a *BudgetError", err)
	}
	if _, err := Render(big+" ", nil); err != nil {
		t.Fatalf("one 20 MB piece of text: %v", err)
	}
	in := map[string]any{"a": []any{big, big}, "b": big, "c": big}
	if _, err := RenderValue(in, nil); !errors.As(err, &be) {
		t.Fatalf("RenderValue with four 20 MB strings: got %v, want a *BudgetError", err)
	}
}

// The ceiling is configurable: below it what fits succeeds, past it the
// same expression fails.
func TestSetMemoryLimit(t *testing.T) {
	t.Parallel()
	src := `len(repeat("x", 1000000))`
	if v, err := Eval(src, nil); err != nil || v != 1000000 {
		t.Fatalf("Eval = %v, %v", v, err)
	}
	prev := SetMemoryLimit(512 << 10)
	defer SetMemoryLimit(prev)
	if prev != DefaultMemoryLimit {
		t.Fatalf("previous limit %d, want the default %d", prev, DefaultMemoryLimit)
	}
	_, err := Eval(src, nil)
	var be *BudgetError
	if !errors.As(err, &be) || be.Limit != 512<<10 {
		t.Fatalf("with a 512 KiB ceiling: got %v, want a *BudgetError with that limit", err)
	}
	if !strings.Contains(err.Error(), "512 KiB") {
		t.Errorf("the message should name the limit: %v", err)
	}
}

// What the checked functions replace behaves as expr-lang's builtins do.
func TestCheckedFunctionsKeepTheirResults(t *testing.T) {
	t.Parallel()
	for src, want := range map[string]string{
		`repeat("ab", 3)`:                           `ababab`,
		`replace("a-b-c", "-", "+")`:                `a+b+c`,
		`replace("a-b-c", "-", "+", 1)`:             `a+b-c`,
		`join(["a", "b"], ", ")`:                    `a, b`,
		`join(split("a,b,c", ","))`:                 `abc`,
		`splitAfter("a,b", ",")`:                    `["a,","b"]`,
		`split("a,b,c", ",", 2)`:                    `["a","b,c"]`,
		`upper("straße")`:                           `STRAßE`,
		`lower("ÀB")`:                               `àb`,
		`"a" + "b" + inputs.region`:                 `abfsn1`,
		`inputs.count + 1`:                          `4`,
		`inputs.count + inputs.count`:               `6`,
		`toJSON([1, {"a": "<"}])`:                   "[\n  1,\n  {\n    \"a\": \"\\u003c\"\n  }\n]",
		`fromJSON("{\"a\": [1, \"x\"]}")`:           `{"a":[1,"x"]}`,
		`fromBase64(toBase64("hé"))`:                `hé`,
		`string(1..3)`:                              `[1 2 3]`,
		`concat([1], [2, 3], 4..5)`:                 `[1,2,3,4,5]`,
		`flatten([1, [2, [3]]])`:                    `[1,2,3]`,
		`reverse(1..3)`:                             `[3,2,1]`,
		`uniq([1, 1, 2])`:                           `[1,2]`,
		`sort([3, 1, 2], "desc")`:                   `[3,2,1]`,
		`sortBy(["bb", "a"], len(#))`:               `["a","bb"]`,
		`groupBy(1..4, # % 2 == 0)`:                 `{"false":[1,3],"true":[2,4]}`,
		`keys({"a": 1})`:                            `["a"]`,
		`values({"a": 1})`:                          `[1]`,
		`toPairs({"a": 1})`:                         `[["a",1]]`,
		`fromPairs([["a", 1]])`:                     `{"a":1}`,
		`median([1, 2, 3, 4])`:                      `2.5`,
		`map(1..3, [#])`:                            `[[1],[2],[3]]`,
		`filter(1..6, # % 2 == 0) | map(# * 10)`:    `[20,40,60]`,
		`"abc" matches ("^" + "a")`:                 `true`,
		`3 in 1..5`:                                 `true`,
		`sum(1..4)`:                                 `10`,
		`reduce(1..3, #acc + string(#), "")`:        `123`,
		`date("2024-01-02").Format("2006")`:         `2024`,
		`len(1..0)`:                                 `0`,
		`let x = "a"; x + x`:                        `aa`,
		`inputs.tags | join("+")`:                   `a+b`,
		`{"k": inputs.tags}.k[1] + "!"`:             `b!`,
		`count(1..10, # > 5) + len(repeat("x", 2))`: `7`,
	} {
		v, err := Eval(src, env)
		if err != nil {
			t.Errorf("%s: %v", src, err)
			continue
		}
		if got := Text(v); got != want {
			t.Errorf("%s = %s, want %s", src, got, want)
		}
	}
}

// The checked functions are internal: an expression naming one gets an
// error, never an unbudgeted call.
func TestCheckedFunctionsAreInternal(t *testing.T) {
	t.Parallel()
	if _, err := Eval(`$sw_repeat($env, "x", 1000000000)`, env); err == nil || !errors.Is(err, errNoBudget) {
		t.Fatalf("calling a checked function directly: got %v, want errNoBudget", err)
	}
}

// uniq keeps the first of every group of equal values, numbers compared as
// numbers, as expr-lang's does, without comparing every pair.
func TestUniq(t *testing.T) {
	t.Parallel()
	for src, want := range map[string]string{
		`uniq([1, 1.0, "1", 2, 2, true, true, nil, nil, "a", "a"])`: `[1,"1",2,true,null,"a"]`,
		`uniq([[1], [1], {"a": 1}, {"a": 1}, [2]])`:                 `[[1],{"a":1},[2]]`,
		`uniq([3, 1, 3, 2, 1])`:                                     `[3,1,2]`,
		`uniq([])`:                                                  `[]`,
		`len(uniq(1..200000))`:                                      `200000`,
		`len(uniq(map(1..200000, # % 7)))`:                          `7`,
		`uniq([-0.0, 0])`:                                           `[-0]`,
	} {
		v, err := Eval(src, nil)
		if err != nil {
			t.Errorf("%s: %v", src, err)
			continue
		}
		if got := Text(v); got != want {
			t.Errorf("%s = %s, want %s", src, got, want)
		}
	}
}

// Loops stop after their step budget: nested loops over big ranges fail
// with a *BudgetError instead of running for hours; ordinary loops run.
func TestLoopSteps(t *testing.T) {
	t.Parallel()
	defer func(n int64) { loopSteps = n }(loopSteps)
	loopSteps = 100_000
	for _, src := range []string{
		`reduce(1..1000000, reduce(1..1000000, #acc + 1, 0), 0)`,
		`let r = 1..100000; all(r, all(r, true))`,
		`count(1..1000, count(1..1000, # > 0) == 1000)`,
		`sortBy(1..10000, len(filter(1..100, # > 50)))`,
	} {
		_, err := Eval(src, nil)
		var be *BudgetError
		if !errors.As(err, &be) || !be.Steps || be.Limit != loopSteps {
			t.Errorf("%s: got %v, want a *BudgetError of the loop steps", src, err)
		}
	}
	if v, err := Eval(`reduce(1..1000, #acc + #, 0)`, nil); err != nil || v != 500500 {
		t.Fatalf("a loop within its steps: %v, %v", v, err)
	}
}
