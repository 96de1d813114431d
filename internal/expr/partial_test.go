package expr

import (
	"reflect"
	"testing"
)

// knownInputs treats inputs.<name> as known and everything else (steps,
// item, run) as known only at run time.
func knownInputs(r Ref) bool { return r.Root == "inputs" && len(r.Path) > 0 }

func TestRenderKnown(t *testing.T) {
	t.Parallel()
	env := map[string]any{"inputs": map[string]any{"name": "ada", "n": int64(2), "tags": []any{"a", "b"}, "tricky": "${{ run.id }}"}}
	tests := []struct {
		tmpl    string
		want    any
		unknown []string
	}{
		{"plain", "plain", nil},
		{"hi ${{ inputs.name }}", "hi ada", nil},
		{"${{ inputs.n * 2 }}", 4, nil},              // a whole-value expression keeps its type
		{"${{ inputs.tags }}", []any{"a", "b"}, nil}, // lists too
		{"${{ steps.a.output }}", "${{ steps.a.output }}", []string{"steps.a.output"}},
		{" ${{ steps.a.output }} ", " ${{ steps.a.output }} ", []string{"steps.a.output"}},
		{"${{ inputs.name }} and ${{ steps.a.answer }}", "ada and ${{ steps.a.answer }}", []string{"steps.a.answer"}},
		{"${{ inputs.name + steps.a.answer }}", "${{ inputs.name + steps.a.answer }}", []string{"steps.a.answer"}},
		{"${{ item }}/${{ item }}", "${{ item }}/${{ item }}", []string{"item"}},
		{"${{ let x = inputs.n; x + 1 }}", 3, nil}, // bound names are no references
		// A kept expression leaves the result a template: escapes stay escaped.
		{"$${{ lit }} ${{ run.id }}", "$${{ lit }} ${{ run.id }}", []string{"run.id"}},
		{"$${{ lit }} ${{ inputs.name }}", "${{ lit }} ada", nil},
		{"${{ inputs.tricky }} ${{ run.id }}", "$${{ run.id }} ${{ run.id }}", []string{"run.id"}},
	}
	for _, tt := range tests {
		got, unknown, err := RenderKnown(tt.tmpl, env, knownInputs)
		if err != nil {
			t.Errorf("RenderKnown(%q): %v", tt.tmpl, err)
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("RenderKnown(%q) = %#v, want %#v", tt.tmpl, got, tt.want)
		}
		var names []string
		for _, r := range unknown {
			names = append(names, r.String())
		}
		if len(names) > 0 || len(tt.unknown) > 0 {
			if !reflect.DeepEqual(names, tt.unknown) {
				t.Errorf("RenderKnown(%q) unknown = %v, want %v", tt.tmpl, names, tt.unknown)
			}
		}
		// With nothing unknown it is Render.
		if len(tt.unknown) == 0 {
			if want, err := Render(tt.tmpl, env); err != nil || !reflect.DeepEqual(got, want) {
				t.Errorf("RenderKnown(%q) = %#v, Render gives %#v (%v)", tt.tmpl, got, want, err)
			}
		}
	}
}

func TestRenderKnownFailsOnlyOnKnownExpressions(t *testing.T) {
	t.Parallel()
	env := map[string]any{"inputs": map[string]any{"n": int64(2)}}
	if _, _, err := RenderKnown("${{ inputs.n + 'x' }} ${{ steps.a.output }}", env, knownInputs); err == nil {
		t.Error("a known expression that fails did not fail")
	}
	if _, _, err := RenderKnown("${{ steps.a.output.b.c }} ${{ len(steps.x) }}", env, knownInputs); err != nil {
		t.Errorf("unknown expressions are not evaluated, got %v", err)
	}
}

func TestRenderValueKnown(t *testing.T) {
	t.Parallel()
	env := map[string]any{"inputs": map[string]any{"url": "https://x"}}
	v := map[string]any{
		"url":  "${{ inputs.url }}/api",
		"body": []any{"${{ steps.b.output }}", int64(1), map[string]any{"a": "${{ steps.a.output }}"}},
	}
	got, unknown, err := RenderValueKnown(v, env, knownInputs)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"url":  "https://x/api",
		"body": []any{"${{ steps.b.output }}", int64(1), map[string]any{"a": "${{ steps.a.output }}"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %#v", got)
	}
	// Keys in sorted order, then list order: body before url.
	if len(unknown) != 2 || unknown[0].String() != "steps.b.output" || unknown[1].String() != "steps.a.output" {
		t.Fatalf("unknown %v", unknown)
	}
	if v["url"] != "${{ inputs.url }}/api" {
		t.Fatal("the value was modified")
	}
}
