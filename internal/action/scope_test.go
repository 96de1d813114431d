package action

import (
	"io"
	"testing"
)

func TestScopeClosesNewestFirstAndRefusesAfterClose(t *testing.T) {
	s := NewScope()
	var order []string
	for _, name := range []string{"first", "second"} {
		v, ok := s.Value(name, func() io.Closer { return closeFunc(func() error { order = append(order, name); return nil }) })
		if !ok || v == nil {
			t.Fatal("an open scope refused a value")
		}
	}
	if _, ok := s.Value("first", func() io.Closer { t.Fatal("created twice"); return nil }); !ok {
		t.Fatal("existing value not returned")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if len(order) != 2 || order[0] != "second" || order[1] != "first" {
		t.Fatalf("closed in order %v", order)
	}
	if _, ok := s.Value("third", func() io.Closer { t.Fatal("created after close"); return nil }); ok {
		t.Fatal("a closed scope took a value")
	}
	var nilScope *Scope
	if _, ok := nilScope.Value("x", func() io.Closer { t.Fatal("created in a nil scope"); return nil }); ok || nilScope.Close() != nil {
		t.Fatal("a nil scope holds values")
	}
}

type closeFunc func() error

func (f closeFunc) Close() error { return f() }
