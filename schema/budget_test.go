package schema

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// doubling is a schema of a few kilobytes whose level i is anyOf of two
// references to level i-1, the bottom a string: checking a number against
// it takes 2^depth applications.
func doubling(depth int) map[string]any {
	defs := map[string]any{"a0": map[string]any{"type": "string"}}
	for i := 1; i <= depth; i++ {
		ref := map[string]any{"$ref": fmt.Sprintf("#/$defs/a%d", i-1)}
		defs[fmt.Sprintf("a%d", i)] = map[string]any{"anyOf": []any{ref, ref}}
	}
	return map[string]any{"$defs": defs, "$ref": fmt.Sprintf("#/$defs/a%d", depth)}
}

// TestExponentialSchemaStops: 40 levels of doubling would take 2^40 steps
// to check; Validate gives up past its budget with an error that says so.
func TestExponentialSchemaStops(t *testing.T) {
	sch, err := Compile(doubling(40))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = sch.Validate(1.0)
	if d := time.Since(start); d > time.Minute {
		t.Fatalf("took %v", d)
	}
	var e *Error
	if !errors.As(err, &e) || e.Keyword != "budget" || !strings.Contains(e.Message, "not checked") || len(e.Causes) != 0 {
		t.Fatalf("got %#v", err)
	}
	// The same shape, 10 deep (2^10 leaves), is checked whole.
	s := doubling(10)
	if err := MustCompile(s).Validate(1.0); err == nil || strings.Contains(err.Error(), "not checked") {
		t.Fatalf("10 deep: %v", err)
	}
	if err := MustCompile(s).Validate("x"); err != nil {
		t.Fatalf("10 deep, valid: %v", err)
	}
}
