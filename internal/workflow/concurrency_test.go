package workflow

import (
	"strings"
	"testing"
)

func TestConcurrencyChecks(t *testing.T) {
	t.Parallel()
	head := "version: 1\nname: q\ninputs:\n  customer: {type: string}\n  token: {type: string, secret: true}\nsteps:\n  - id: a\n    uses: log\n"
	cases := []struct {
		name, concurrency, path, rule string
	}{
		{"plain limit", "{limit: 1}", "", ""},
		{"keyed", "{limit: 3, key: '${{ inputs.customer }}'}", "", ""},
		{"literal key", "{limit: 3, key: fixed}", "", ""},
		{"zero limit", "{limit: 0}", "/concurrency/limit", RuleFormat},
		{"limit too large", "{limit: 10001}", "/concurrency/limit", RuleFormat},
		{"no limit", "{key: x}", "/concurrency", RuleRequired},
		{"unknown field", "{limit: 1, max: 2}", "/concurrency/max", RuleUnknownField},
		{"reads a step", "{limit: 1, key: '${{ steps.a.output }}'}", "/concurrency/key", RuleReference},
		{"reads env", "{limit: 1, key: '${{ env.HOME }}'}", "/concurrency/key", RuleReference},
		{"unknown input", "{limit: 1, key: '${{ inputs.nope }}'}", "/concurrency/key", RuleReference},
		{"secret input", "{limit: 1, key: '${{ inputs.token }}'}", "/concurrency/key", RuleReference},
		{"bad expression", "{limit: 1, key: '${{ inputs. }}'}", "/concurrency/key", RuleExpression},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := Check([]byte(head+"concurrency: "+tc.concurrency+"\n"), Options{})
			if tc.path == "" {
				if len(res.Violations) > 0 {
					t.Fatalf("violations: %v", res.Violations)
				}
				if res.Workflow == nil || res.Workflow.Concurrency == nil || res.Workflow.Concurrency.Limit < 1 {
					t.Fatalf("concurrency not parsed: %+v", res.Workflow)
				}
				return
			}
			found := false
			for _, v := range res.Violations {
				if v.Path == tc.path && v.Rule == tc.rule {
					found = true
				}
			}
			if !found {
				var got []string
				for _, v := range res.Violations {
					got = append(got, v.Path+" "+v.Rule+" "+v.Message)
				}
				t.Fatalf("want %s %s, got:\n%s", tc.path, tc.rule, strings.Join(got, "\n"))
			}
		})
	}
}
