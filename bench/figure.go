package main

import (
	"fmt"
	"math"
)

// Figure is one measured number beside what it is compared with: a limit
// measured in the same run (raw SQLite commits), a peer (the TypeScript
// SDK server), or the target when nothing else applies.
type Figure struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	Unit  string  `json:"unit"`
	// Baseline says what the figure is compared with.
	Baseline string `json:"baseline"`
	// BaselineValue and Ratio (Value ÷ BaselineValue) are null when the
	// baseline could not be measured (the peer is unavailable).
	BaselineValue *float64 `json:"baseline_value"`
	Ratio         *float64 `json:"ratio"`

	// Not part of the JSON: the table shows them.
	target Target
	detail string // how it was measured, sizes, secondary numbers
	// unavailable says why the baseline could not be measured.
	unavailable string
}

// Target is the goal for a figure. met reports whether it holds;
// it is never an error not to meet it.
type Target struct {
	Text string
	met  func(f Figure) bool
}

// compare fills in the baseline of f and its ratio.
func (f *Figure) compare(baseline string, value float64) {
	f.Baseline = baseline
	if value <= 0 || math.IsNaN(value) || math.IsInf(value, 0) {
		f.BaselineValue, f.Ratio = nil, nil
		return
	}
	r := f.Value / value
	f.BaselineValue, f.Ratio = &value, &r
}

// Result is "met", "missed" or why neither can be said.
func (f Figure) Result() string {
	switch {
	case f.unavailable != "":
		return f.unavailable
	case f.target.met == nil:
		return "(no target)"
	case f.Value <= 0 || math.IsNaN(f.Value):
		return "not measured"
	case f.target.met(f):
		return "met"
	default:
		return "missed"
	}
}

// The targets.

// ratioAtLeast: the figure is at least min times its baseline.
func ratioAtLeast(min float64, text string) Target {
	return Target{Text: text, met: func(f Figure) bool { return f.Ratio != nil && *f.Ratio >= min }}
}

// ratioAtMost: the figure is at most max times its baseline.
func ratioAtMost(max float64, text string) Target {
	return Target{Text: text, met: func(f Figure) bool { return f.Ratio != nil && *f.Ratio <= max }}
}

// valueAtLeast: the figure itself is at least min.
func valueAtLeast(min float64, text string) Target {
	return Target{Text: text, met: func(f Figure) bool { return f.Value >= min }}
}

// valueAtMost: the figure itself is at most max.
func valueAtMost(max float64, text string) Target {
	return Target{Text: text, met: func(f Figure) bool { return f.Value <= max }}
}

// againstTarget compares a figure that has no measured peer with its
// target's limit, so that the ratio says how far it is from it.
func (f *Figure) againstTarget(limit float64) {
	f.compare(fmt.Sprintf("target %s", f.target.Text), limit)
}
