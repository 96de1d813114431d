package secret

import (
	"errors"
	"fmt"
	"io/fs"
	"reflect"
	"strings"
	"sync"
	"testing"
)

func TestMask(t *testing.T) {
	t.Parallel()
	m := NewMasker()
	m.Add("hunter2", "abcd", "cdef", "xx", "", "tok")
	if m.Len() != 4 {
		t.Fatalf("Len = %d, want 4 (values under 3 bytes ignored)", m.Len())
	}
	cases := map[string]string{
		"":                           "",
		"nothing here":               "nothing here",
		"password hunter2!":          "password ***!",
		"hunter2 and hunter2":        "*** and ***",
		"abcdef":                     "***",   // overlapping secrets, fully hidden
		"xabcdefx":                   "x***x", // ... also inside text
		"cdefabcd":                   "***",   // touching occurrences merge
		"tok tok tok":                "*** *** ***",
		"tokk":                       "***k",
		"xx is too short to mask":    "xx is too short to mask",
		"hunte hunter hunter2hunter": "hunte hunter ***hunter",
	}
	for in, want := range cases {
		if got := m.Mask(in); got != want {
			t.Errorf("Mask(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestMaskLongestFirst(t *testing.T) {
	t.Parallel()
	// "secret" is inside "secret-long": the long one must win, leaving no "-long".
	m := NewMasker()
	m.Add("secret", "secret-long")
	if got := m.Mask("a secret-long b"); got != "a *** b" {
		t.Fatalf("Mask = %q", got)
	}
	m2 := NewMasker()
	m2.Add("aaa")
	if got := m2.Mask("aaaaa"); got != "***" {
		t.Fatalf("self-overlapping secret: Mask = %q, want ***", got)
	}
}

func TestMaskUTF8(t *testing.T) {
	t.Parallel()
	m := NewMasker()
	m.Add("pässwörd")
	if got := m.Mask("ünd pässwörd ünd"); got != "ünd *** ünd" {
		t.Fatalf("Mask = %q", got)
	}
}

func TestMaskConcurrent(t *testing.T) {
	t.Parallel()
	m := NewMasker()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 200 {
				v := fmt.Sprintf("secret-%d-%d", i, j)
				m.Add(v)
				if got := m.Mask("x " + v + " y"); got != "x *** y" {
					t.Errorf("Mask = %q", got)
					return
				}
			}
		}()
	}
	wg.Wait()
	if m.Len() != 1600 {
		t.Fatalf("Len = %d, want 1600", m.Len())
	}
}

func TestMaskValue(t *testing.T) {
	t.Parallel()
	m := NewMasker()
	m.Add("hunter2", "tok_abc")
	in := map[string]any{
		"password": "hunter2",
		"tok_abc":  "key is secret too",
		"list":     []any{"a hunter2 b", 42, true, nil, 1.5, map[string]any{"n": "tok_abc"}},
		"strs":     []string{"hunter2"},
		"headers":  map[string]string{"Authorization": "Bearer tok_abc"},
		"count":    3,
	}
	orig := map[string]any{
		"password": "hunter2",
		"tok_abc":  "key is secret too",
		"list":     []any{"a hunter2 b", 42, true, nil, 1.5, map[string]any{"n": "tok_abc"}},
		"strs":     []string{"hunter2"},
		"headers":  map[string]string{"Authorization": "Bearer tok_abc"},
		"count":    3,
	}
	want := map[string]any{
		"password": "***",
		"***":      "key is secret too",
		"list":     []any{"a *** b", 42, true, nil, 1.5, map[string]any{"n": "***"}},
		"strs":     []string{"***"},
		"headers":  map[string]string{"Authorization": "Bearer ***"},
		"count":    3,
	}
	got := m.MaskValue(in)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("MaskValue =\n%#v\nwant\n%#v", got, want)
	}
	if !reflect.DeepEqual(in, orig) {
		t.Fatalf("MaskValue modified its input: %#v", in)
	}
	// The copy is deep: changing it does not reach the input.
	got.(map[string]any)["list"].([]any)[5].(map[string]any)["n"] = "changed"
	if in["list"].([]any)[5].(map[string]any)["n"] != "tok_abc" {
		t.Fatal("MaskValue result shares a nested map with its input")
	}
	for _, scalar := range []any{nil, 1, 2.5, false, "plain"} {
		if got := m.MaskValue(scalar); got != scalar {
			t.Errorf("MaskValue(%#v) = %#v", scalar, got)
		}
	}
}

func TestMaskValueKeyCollisions(t *testing.T) {
	t.Parallel()
	m := NewMasker()
	m.Add("aaa", "bbb")
	in := map[string]any{"aaa": 1, "bbb": 2, "***": 0}
	want := map[string]any{"***": 0, "***#2": 1, "***#3": 2}
	for range 20 { // map order is random; the result must not be
		if got := m.MaskValue(in); !reflect.DeepEqual(got, want) {
			t.Fatalf("MaskValue = %#v, want %#v", got, want)
		}
	}
}

func TestMaskError(t *testing.T) {
	t.Parallel()
	m := NewMasker()
	m.Add("hunter2")
	base := fmt.Errorf("login with hunter2: %w", fs.ErrPermission)
	err := m.MaskError(base)
	if err.Error() != "login with ***: permission denied" {
		t.Fatalf("Error() = %q", err)
	}
	if !errors.Is(err, fs.ErrPermission) {
		t.Fatal("errors.Is does not see through the masked error")
	}
	var pe *fs.PathError
	wrapped := m.MaskError(&fs.PathError{Op: "open", Path: "/tmp/hunter2", Err: fs.ErrNotExist})
	if !errors.As(wrapped, &pe) || pe.Path != "/tmp/hunter2" {
		t.Fatal("errors.As does not find the original error")
	}
	if strings.Contains(wrapped.Error(), "hunter2") {
		t.Fatalf("Error() = %q leaks", wrapped)
	}
	// Secrets learned later are masked too.
	late := m.MaskError(errors.New("token tok_late"))
	m.Add("tok_late")
	if late.Error() != "token ***" {
		t.Fatalf("Error() = %q, want the later secret masked", late)
	}
	if m.MaskError(nil) != nil {
		t.Fatal("MaskError(nil) != nil")
	}
}

// A long run of overlapping occurrences (the secret "aaa" in a line of a's)
// is not held back whole: MaskStream holds at most maxHeld bytes, and what
// it lets go still shows none of the secret.
func TestMaskStreamBoundsWhatItHolds(t *testing.T) {
	t.Parallel()
	m := NewMasker()
	m.Add("aaa")
	piece := strings.Repeat("a", 4096)
	var out strings.Builder
	tail := ""
	for range 64 { // 256 KB
		masked, t2 := m.MaskStream(tail + piece)
		if len(t2) > maxHeld {
			t.Fatalf("held %d bytes, more than %d", len(t2), maxHeld)
		}
		out.WriteString(masked)
		tail = t2
	}
	out.WriteString(m.Mask(tail))
	if got := out.String(); strings.Contains(got, "a") {
		t.Fatalf("streamed output shows %d a's", strings.Count(got, "a"))
	}
}
