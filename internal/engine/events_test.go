package engine

import (
	"fmt"
	"testing"

	"stepwise.dev/stepwise/internal/store"
)

// TestBusRoutesByRun: a run's subscribers get its events, subscribers of
// every run get all, nobody else gets any; after stop nothing is sent.
func TestBusRoutesByRun(t *testing.T) {
	b := newBus()
	a, stopA := b.subscribe("a", 8)
	a2, stopA2 := b.subscribe("a", 8)
	bb, stopB := b.subscribe("b", 8)
	all, stopAll := b.subscribe("", 8)
	b.publish(Event{RunID: "a", Seq: 1}, Event{RunID: "b", Seq: 1}, Event{RunID: "c", Seq: 1}, Event{RunID: "a", Seq: 2})
	stopA2()
	b.publish(Event{RunID: "a", Seq: 3})
	stopA()
	stopB()
	stopAll()
	b.publish(Event{RunID: "a", Seq: 4}) // no subscriber left: must not panic on a closed channel
	drain := func(ch <-chan Event) (out []string) {
		for e := range ch {
			out = append(out, e.RunID+string(rune('0'+e.Seq)))
		}
		return out
	}
	for _, c := range []struct {
		name string
		ch   <-chan Event
		want string
	}{{"a", a, "[a1 a2 a3]"}, {"a2", a2, "[a1 a2]"}, {"b", bb, "[b1]"}, {"all", all, "[a1 b1 c1 a2 a3]"}} {
		if got := fmt.Sprint(drain(c.ch)); got != c.want {
			t.Errorf("%s got %s, want %s", c.name, got, c.want)
		}
	}
	if len(b.runs) != 0 || len(b.every) != 0 {
		t.Errorf("subscriptions left after stop: %v %v", b.runs, b.every)
	}
}

// A subscriber that does not keep up loses its oldest events: the newest,
// which carries the run's status, always arrives.
func TestSlowSubscriberKeepsTheNewest(t *testing.T) {
	b := newBus()
	ch, stop := b.subscribe("r", 4)
	defer stop()
	var evs []Event
	for i := int64(1); i <= 10; i++ {
		evs = append(evs, Event{RunID: "r", Seq: i, Status: store.StatusRunning})
	}
	evs[9].Status = store.StatusSucceeded
	b.publish(evs...)
	var got []int64
	for range 4 {
		got = append(got, (<-ch).Seq)
	}
	if fmt.Sprint(got) != "[7 8 9 10]" {
		t.Fatalf("received %v, want the newest four [7 8 9 10]", got)
	}
}
