package action

import (
	"context"
	"fmt"
	"testing"
)

// described is an action with an input schema of its own name.
type described struct{ name string }

func (d described) Name() string                           { return d.name }
func (d described) Description() string                    { return "test" }
func (d described) Safety() string                         { return ReadOnly }
func (d described) Run(context.Context, Call) (any, error) { return nil, nil }
func (d described) InputSchema() map[string]any {
	return map[string]any{"type": "object", "properties": map[string]any{"x": map[string]any{"type": "string"}}}
}
func (d described) OutputSchema() map[string]any { return nil }

// The compiled input schemas kept stay at maxSchemas however many actions
// are checked; one that fell out is compiled again and still checks.
func TestInputSchemasKeptAreBounded(t *testing.T) {
	defer func(n int) { maxSchemas = n }(maxSchemas)
	maxSchemas = 3
	r := NewRegistry()
	for i := range 10 {
		a := described{name: fmt.Sprintf("op%d", i)}
		r.Register(a)
		if vs := r.CheckInput(a, map[string]any{"x": 1}); len(vs) != 1 {
			t.Fatalf("%s: %v, want one violation", a.name, vs)
		}
	}
	if n := r.schemas.compiled.Len(); n != 3 {
		t.Fatalf("%d schemas kept, want the bound 3", n)
	}
	if vs := r.CheckInput(described{name: "op0"}, map[string]any{"x": 1}); len(vs) != 1 {
		t.Fatalf("op0 compiled again: %v", vs)
	}
}
