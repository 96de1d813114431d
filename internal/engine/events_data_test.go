package engine

import (
	"testing"
	"time"

	"stepwise.dev/stepwise/internal/secret"
	"stepwise.dev/stepwise/internal/workflow"
)

// TestHotEventDataMatchesMaskedJSON: the step events written without a map
// carry byte for byte what maskedJSON writes for the same data.
func TestHotEventDataMatchesMaskedJSON(t *testing.T) {
	e := &Engine{}
	rs := &runState{mask: secret.NewMasker()}
	uses := "noop"
	for _, visit := range []int{1, 7, 12345} {
		sx := &stepExec{s: &workflow.Step{ID: "s", Uses: uses}, visit: visit, started: time.Unix(1, 0)}
		want, _ := maskedJSON(rs.mask, map[string]any{"visit": visit, "kind": sx.s.Kind()})
		if got := e.startEvent(rs, sx); string(got.Data) != string(want) || got.Type != EventStepStarted || got.StepID != "s" || !got.At.Equal(sx.started) {
			t.Errorf("step.started: %s %+v, want %s", got.Data, got, want)
		}
		want, _ = maskedJSON(rs.mask, map[string]any{"visit": visit})
		if got := visitEvent(EventStepSucceeded, "s", visit, sx.started); string(got.Data) != string(want) {
			t.Errorf("step.succeeded: %s, want %s", got.Data, want)
		}
	}
}
