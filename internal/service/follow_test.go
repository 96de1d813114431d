package service

import "testing"

// A step's status in a drawing is that of its last visit, and among the
// records of one visit (foreach items) the one that says most.
func TestStepStatuses(t *testing.T) {
	v := &RunView{Steps: []StepView{
		{ID: "a", Status: "succeeded"},
		{ID: "loop", Visit: 0, Status: "failed"},
		{ID: "loop", Visit: 2, Status: "succeeded"},
		{ID: "item", Key: "each[0].item", Status: "succeeded"},
		{ID: "item", Key: "each[1].item", Status: "failed"},
		{ID: "item", Key: "each[2].item", Status: "succeeded"},
		{ID: "q", Status: "waiting"},
		{ID: "s", Status: "skipped"},
	}}
	got := StepStatuses(v)
	want := map[string]string{"a": "succeeded", "loop": "succeeded", "item": "failed", "q": "waiting", "s": "skipped"}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for id, s := range want {
		if got[id] != s {
			t.Errorf("step %s: %q, want %q", id, got[id], s)
		}
	}
}
