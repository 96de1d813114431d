package token

import (
	"errors"
	"testing"
	"time"
	"unicode/utf8"

	"pgregory.net/rapid"
)

// utf8Upto draws a valid UTF-8 string of at most n bytes.
func utf8Upto(n int) *rapid.Generator[string] {
	return rapid.Custom(func(t *rapid.T) string {
		s := rapid.StringN(0, n, n).Draw(t, "s")
		for len(s) > n { // StringN bounds runes and bytes; be explicit anyway
			_, size := utf8.DecodeLastRuneInString(s)
			s = s[:len(s)-size]
		}
		return s
	})
}

func TestPropertyRoundTrip(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		key := rapid.SliceOfN(rapid.Byte(), KeySize, KeySize).Draw(t, "key")
		c := Claims{
			RunID:   utf8Upto(200).Draw(t, "run"),
			StepKey: utf8Upto(200).Draw(t, "step"),
			Seq:     rapid.Int64Min(0).Draw(t, "seq"),
			Expires: time.Unix(rapid.Int64Range(-1<<40, 1<<40).Draw(t, "expires"), rapid.Int64Range(0, 999_999_999).Draw(t, "nanos")),
		}
		s := NewSigner(key)
		tok := s.Sign(c)
		now := c.Expires.Add(-time.Second)
		got, err := s.Verify(tok, now)
		if err != nil {
			t.Fatalf("Verify(%q): %v", tok, err)
		}
		if got.RunID != c.RunID || got.StepKey != c.StepKey || got.Seq != c.Seq || got.Expires.Unix() != c.Expires.Unix() {
			t.Fatalf("claims = %+v, want %+v", got, c)
		}
		if _, err := s.Verify(tok, c.Expires.Add(time.Second)); !errors.Is(err, ErrExpired) {
			t.Fatalf("after expiry: err = %v, want ErrExpired", err)
		}
	})
}
