package action

import (
	"strings"
	"testing"
)

func TestCheckInputAgainstTheSchema(t *testing.T) {
	r := Builtins()
	log, _ := r.Get("log")
	if vs := r.CheckInput(log, map[string]any{"message": "hi", "level": "warn"}); len(vs) != 0 {
		t.Fatalf("valid input refused: %v", vs)
	}
	vs := r.CheckInput(log, map[string]any{"mesage": "hi", "level": "loud"})
	var msgs []string
	for _, v := range vs {
		msgs = append(msgs, v.Path+" "+v.Message)
	}
	got := strings.Join(msgs, "\n")
	for _, want := range []string{"/with/level", "loud", "message", "mesage"} {
		if !strings.Contains(got, want) {
			t.Errorf("violations lack %q:\n%s", want, got)
		}
	}
	// Numbers of every Go type an expression yields are JSON numbers.
	noop, _ := r.Get("noop")
	if vs := r.CheckInput(noop, map[string]any{"fail": 3, "delay": "1ms"}); len(vs) != 0 {
		t.Fatalf("noop: %v", vs)
	}
}

func TestInputKeys(t *testing.T) {
	r := Builtins()
	keys, required, closed, ok := r.InputKeys("log")
	if !ok || !closed || strings.Join(keys, ",") != "level,message" || strings.Join(required, ",") != "message" {
		t.Fatalf("log: %v %v %v %v", keys, required, closed, ok)
	}
	if _, _, _, ok := r.InputKeys("nope"); ok {
		t.Fatal("an unknown action has keys")
	}
	// Infos are sorted by name and carry schemas; the count is not
	// checked so that new built-ins do not break this test.
	infos := r.Infos()
	byName := map[string]Info{}
	for i, info := range infos {
		if i > 0 && infos[i-1].Name >= info.Name {
			t.Fatalf("infos not sorted: %s before %s", infos[i-1].Name, info.Name)
		}
		byName[info.Name] = info
	}
	if lg := byName["log"]; lg.InputSchema == nil || lg.Safety != ReadOnly {
		t.Fatalf("log: %+v", lg)
	}
	if h := byName["http"]; h.InputSchema == nil || h.OutputSchema == nil || h.Safety != Mutating {
		t.Fatalf("http: %+v", h)
	}
}

// An empty input skips the validator only when the schema accepts an empty
// object: a required key is still reported, every time it is asked.
func TestCheckInputEmpty(t *testing.T) {
	r := Builtins()
	log, _ := r.Get("log")
	noop, _ := r.Get("noop")
	for range 2 { // the second call uses the cached verdict
		vs := r.CheckInput(log, map[string]any{})
		if len(vs) != 1 || !strings.Contains(vs[0].Message, "message") {
			t.Fatalf("log without its required message: %v", vs)
		}
		if vs := r.CheckInput(noop, map[string]any{}); len(vs) != 0 {
			t.Fatalf("noop without input: %v", vs)
		}
	}
}
