package workflow

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// TestNormalizeEveryDepth: numbers decoded as json.Number (and Go integer
// types) become int64 or float64 at every depth, large integers stay
// exact, and the caller's value is left as it was.
func TestNormalizeEveryDepth(t *testing.T) {
	t.Parallel()
	d := json.NewDecoder(strings.NewReader(`{"week": 12, "ratio": 0.5, "big": 9007199254740993,
		"list": [1, [2.5, {"n": 3}]], "form": {"start_week": 12, "email": "a@b"}}`))
	d.UseNumber()
	var in any
	if err := d.Decode(&in); err != nil {
		t.Fatal(err)
	}
	got := Normalize(in)
	want := map[string]any{"week": int64(12), "ratio": 0.5, "big": int64(9007199254740993),
		"list": []any{int64(1), []any{2.5, map[string]any{"n": int64(3)}}},
		"form": map[string]any{"start_week": int64(12), "email": "a@b"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Normalize = %#v\nwant %#v", got, want)
	}
	if _, ok := in.(map[string]any)["week"].(json.Number); !ok {
		t.Error("Normalize changed its argument")
	}
	if got := Normalize(map[string]any{"xs": []int{1, 2}, "u": uint8(3)}); !reflect.DeepEqual(got,
		map[string]any{"xs": []any{int64(1), int64(2)}, "u": int64(3)}) {
		t.Errorf("Go values: %#v", got)
	}
	plain := map[string]any{"a": []any{int64(1), "x"}}
	if got := Normalize(plain); reflect.ValueOf(got).Pointer() != reflect.ValueOf(plain).Pointer() {
		t.Error("a value already in the data model was copied")
	}
}
