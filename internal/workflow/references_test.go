package workflow

import (
	"reflect"
	"testing"
)

func TestReferences(t *testing.T) {
	t.Parallel()
	src, vs := Parse([]byte(`
version: 1
name: r
inputs: {region: {type: string}}
steps:
  - id: a
    uses: log
    with: {message: "in ${{ inputs.region }} at ${{ run.id }}", "x/y": "${{ inputs.region + steps.b.output.body.id }}"}
  - id: b
    if: ${{ inputs.region == "x" }}
    uses: noop
outputs: {o: "${{ steps.a.output }}", lit: "$${{ not.an.expression }}"}
`))
	if len(vs) > 0 {
		t.Fatal(vs)
	}
	got := References(src.Value)
	want := []Reference{
		{Path: "/outputs/o", Expression: "steps.a.output", Reads: []string{"steps.a.output"}},
		{Path: "/steps/0/with/message", Expression: "inputs.region", Reads: []string{"inputs.region"}},
		{Path: "/steps/0/with/message", Expression: "run.id", Reads: []string{"run.id"}},
		{Path: "/steps/0/with/x~1y", Expression: "inputs.region + steps.b.output.body.id", Reads: []string{"inputs.region", "steps.b.output.body.id"}},
		{Path: "/steps/1/if", Expression: `inputs.region == "x"`, Reads: []string{"inputs.region"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("References =\n%+v\nwant\n%+v", got, want)
	}
}
