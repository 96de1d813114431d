package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
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

// TestHostileSchemas checks schemas and values written to hurt: each is
// refused with its error type, none panics or runs without bound.
func TestHostileSchemas(t *testing.T) {
	nested := func(n int) string { return strings.Repeat(`{"not":`, n) + `{}` + strings.Repeat(`}`, n) }
	var wide strings.Builder
	wide.WriteString(`{"properties":{`)
	for i := range maxObjects {
		if i > 0 {
			wide.WriteString(",")
		}
		fmt.Fprintf(&wide, `"p%d":{"minLength":1}`, i)
	}
	wide.WriteString(`}}`)
	for _, tt := range []struct{ name, schema, location string }{
		{"too deep", nested(maxDepth + 1), "/not/not/not"},
		{"too many objects", wide.String(), "/properties/p"},
		{"a bound no decimal holds", `{"minimum":1e1000000000,"multipleOf":1e-1000000000}`, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Compile(decodeNumbers(t, tt.schema))
			var se *SchemaError
			if !errors.As(err, &se) || !strings.HasPrefix(se.Location, tt.location) {
				t.Fatalf("got %v, want a *SchemaError at %s…", err, tt.location)
			}
		})
	}
	if _, err := Compile(decode(t, nested(maxDepth))); err != nil {
		t.Errorf("%d nested schemas: %v", maxDepth, err)
	}
	for _, tt := range []struct {
		name, schema string
		value        any
		keyword      string
	}{
		{"a number no decimal holds", `{"minimum":0}`, json.Number("1e1000000000"), "unchecked"},
		{"$dynamicRef loop", `{"$defs":{"a":{"$dynamicRef":"#a","$dynamicAnchor":"a"}},"$ref":"#/$defs/a"}`, 1.0, "$ref"},
		{"$ref loop", `{"$ref":"#"}`, 1.0, "$ref"},
		// Branches that fail on their type return before the library
		// counts them: the schema holding them counts them.
		{"wide anyOf on every item", `{"items":{"anyOf":[` + strings.TrimSuffix(strings.Repeat(`{"type":"string"},`, maxObjects-10), ",") + `]}}`,
			slices.Repeat([]any{1.0}, 10_000), "budget"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := compile(t, tt.schema).Validate(tt.value)
			var e *Error
			if !errors.As(err, &e) || e.Leaves()[0].Keyword != tt.keyword {
				t.Fatalf("got %#v, want an *Error of keyword %s", err, tt.keyword)
			}
		})
	}
}

// TestConcurrentValidate checks that validations of one Schema from
// several goroutines each get their own verdict and their own budget (run
// it with -race).
func TestConcurrentValidate(t *testing.T) {
	s := MustCompile(doubling(10))
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 16 {
		wg.Go(func() {
			v, valid := any("x"), true
			if i%2 == 1 {
				v, valid = 1.0, false
			}
			if err := s.Validate(v); (err == nil) != valid || (err != nil && strings.Contains(err.Error(), "not checked")) {
				errs <- fmt.Errorf("goroutine %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
