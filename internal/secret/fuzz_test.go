package secret

import (
	"errors"
	"strings"
	"testing"
)

func FuzzOpen(f *testing.F) {
	s := sealer(f, keyA)
	good, err := s.Seal([]byte("seed secret"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add("")
	f.Add(SealedPrefix)
	f.Add(SealedPrefix + "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")
	f.Add("sealed:v1:\n")
	f.Fuzz(func(t *testing.T, text string) {
		plain, err := s.Open(text)
		if err == nil {
			// Only a genuine seal opens; re-sealing must round-trip.
			again, err := s.Seal(plain)
			if err != nil {
				t.Fatal(err)
			}
			if back, err := s.Open(again); err != nil || string(back) != string(plain) {
				t.Fatalf("re-seal round trip: %q, %v", back, err)
			}
			return
		}
		if !errors.Is(err, ErrNotSealed) && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("error %v wraps neither sentinel", err)
		}
		if IsSealed(text) == errors.Is(err, ErrNotSealed) {
			t.Fatalf("IsSealed = %v but err = %v", IsSealed(text), err)
		}
	})
}

func FuzzMask(f *testing.F) {
	f.Add("abcdef", "abcd", "cdef")
	f.Add("aaaaa", "aaa", "xx")
	f.Add("p hunter2 p", "hunter2", "hunter")
	f.Fuzz(func(t *testing.T, text, s1, s2 string) {
		m := NewMasker()
		m.Add(s1, s2)
		got := m.Mask(text)
		if want := maskModel(text, []string{s1, s2}); got != want {
			t.Fatalf("Mask(%q) with %q, %q = %q, want %q", text, s1, s2, got, want)
		}
		for _, s := range []string{s1, s2} {
			if len(s) >= MinMaskLen && !strings.Contains(s, "*") && strings.Contains(got, s) {
				t.Fatalf("Mask(%q) = %q still contains %q", text, got, s)
			}
		}
	})
}
