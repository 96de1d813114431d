package workflow

import (
	"fmt"
	"sort"
	"strings"
)

// Violation is one problem found in a workflow. Validation reports all of
// them at once, ordered by position.
type Violation struct {
	// Path is a JSON pointer to the offending value ("" is the document).
	Path string `json:"path"`
	Pos
	// Rule names the broken rule; see the Rule* constants.
	Rule    string `json:"rule"`
	Message string `json:"message"`
	// Expected and Actual describe a mismatch where that helps.
	Expected string `json:"expected,omitempty"`
	Actual   string `json:"actual,omitempty"`
	// Hint suggests a fix ("did you mean `region`?").
	Hint string `json:"hint,omitempty"`
}

func (v Violation) String() string {
	s := fmt.Sprintf("%d:%d: %s: %s", v.Line, v.Column, v.Rule, v.Message)
	if v.Hint != "" {
		s += " (hint: " + v.Hint + ")"
	}
	return s
}

// The rules a violation can name. They are stable identifiers: tools and
// agents may match on them.
const (
	RuleSyntax          = "syntax"           // not YAML/JSON, or not expressible as JSON data
	RuleDuplicateKey    = "duplicate-key"    // a mapping key appears twice
	RuleUnknownField    = "unknown-field"    // a field the language does not have
	RuleRequired        = "required"         // a required field is missing
	RuleType            = "type"             // a value of the wrong type
	RuleEnum            = "enum"             // a value outside its allowed set
	RuleFormat          = "format"           // a value that breaks a pattern or bound of the schema
	RuleStepKind        = "step-kind"        // a step without exactly one kind, or a field its kind does not take
	RuleDuplicateID     = "duplicate-id"     // two steps (anywhere) with one id
	RuleGotoTarget      = "goto-target"      // goto to a step that does not exist or is out of reach
	RuleUnboundedLoop   = "unbounded-loop"   // a goto cycle without max_visits
	RuleRegex           = "regex"            // a pattern that does not compile
	RuleDefault         = "default"          // a default that breaks its own declaration
	RuleDuration        = "duration"         // a duration that does not parse
	RuleName            = "name"             // an unsafe workflow name
	RuleExpression      = "expression"       // a ${{ }} that does not scan or parse
	RuleReference       = "reference"        // a reference to something that does not exist (yet)
	RuleSchema          = "schema"           // an agent output_schema that is not a valid JSON Schema
	RuleUnknownAction   = "unknown-action"   // uses: names no known action
	RuleUnknownWorkflow = "unknown-workflow" // workflow: names no known workflow
	RuleConstraint      = "constraint"       // constraints that contradict each other (minimum > maximum, …)
)

func sortViolations(vs []Violation) {
	sort.SliceStable(vs, func(i, j int) bool {
		a, b := vs[i], vs[j]
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		if a.Column != b.Column {
			return a.Column < b.Column
		}
		if a.Rule != b.Rule {
			return a.Rule < b.Rule
		}
		if a.Path != b.Path {
			return a.Path < b.Path
		}
		return a.Message < b.Message
	})
}

// suggest returns the candidate closest to s when it is close enough to be
// a plausible typo, or "".
func suggest(s string, candidates []string) string {
	ls := strings.ToLower(s)
	for _, c := range candidates {
		// "bool" for "boolean", "str" for "string": a prefix is a likely
		// abbreviation, however many letters are missing.
		if lc := strings.ToLower(c); len(ls) >= 3 && lc != ls && strings.HasPrefix(lc, ls) {
			return c
		}
	}
	best, bestD := "", -1
	for _, c := range candidates {
		d := EditDistance(strings.ToLower(s), strings.ToLower(c))
		if bestD < 0 || d < bestD {
			best, bestD = c, d
		}
	}
	limit := 2
	if len(s) > 8 {
		limit = 3
	}
	if bestD < 0 || bestD > limit || bestD >= len(s) {
		return ""
	}
	return best
}

// didYouMean formats a suggestion as a hint, or "" when there is none.
func didYouMean(s string, candidates []string) string {
	if m := suggest(s, candidates); m != "" {
		return fmt.Sprintf("did you mean %q?", m)
	}
	return ""
}

// EditDistance is the Damerau–Levenshtein (optimal string alignment)
// distance between a and b: insertions, deletions, substitutions and swaps
// of neighbours each cost one. Every "did you mean" uses it.
func EditDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
