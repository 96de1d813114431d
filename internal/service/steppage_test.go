package service

import (
	"errors"
	"strings"
	"testing"
)

// Pages hold at most the limit, stop at the byte budget but always hold
// one step, and together give every step once.
func TestPageStepsBounds(t *testing.T) {
	var steps []StepView
	for i := range 7 {
		out := "small"
		if i == 2 || i == 3 {
			out = strings.Repeat("x", stepPageBytes) // each alone over the budget
		}
		steps = append(steps, StepView{ID: string(rune('a' + i)), Output: out})
	}
	var got []string
	var sizes []int
	cursor := ""
	for range 10 {
		p, err := PageSteps(steps, cursor, 3)
		if err != nil {
			t.Fatal(err)
		}
		if p.From != len(got) {
			t.Fatalf("page from %d, want %d", p.From, len(got))
		}
		for _, s := range p.Steps {
			got = append(got, s.ID)
		}
		sizes = append(sizes, len(p.Steps))
		if cursor = p.Next; cursor == "" {
			break
		}
	}
	if strings.Join(got, "") != "abcdefg" {
		t.Errorf("steps %v", got)
	}
	// [a b] stops before c (over the budget), [c] alone, [d] alone, [e f g].
	if want := []int{2, 1, 1, 3}; len(sizes) != len(want) || sizes[0] != 2 || sizes[1] != 1 || sizes[2] != 1 || sizes[3] != 3 {
		t.Errorf("page sizes %v, want %v", sizes, want)
	}
	if p, _ := PageSteps(steps, "", 500); len(p.Steps) != 2 {
		t.Errorf("a limit over the maximum: %d steps", len(p.Steps))
	}
	for _, bad := range []string{"x1", "s-1", "s8", "s", "1"} {
		if _, err := PageSteps(steps, bad, 0); !errors.Is(err, ErrStepCursor) {
			t.Errorf("cursor %q: %v", bad, err)
		}
	}
}
