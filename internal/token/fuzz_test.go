package token

import (
	"errors"
	"testing"
	"time"
)

func FuzzVerify(f *testing.F) {
	s := NewSigner(keyA)
	f.Add(s.Sign(sample()))
	f.Add(s.Sign(Claims{}))
	f.Add(s.Sign(Claims{RunID: "ü\x00", StepKey: "a.b", Seq: -1, Expires: now.Add(1 << 50)}))
	f.Add(NewSigner(keyB).Sign(sample()))
	f.Add("")
	f.Add("sw1.")
	f.Add("sw1..")
	f.Add("sw1.AA.AA")
	f.Add("eyJhbGciOiJIUzI1NiJ9.e30.ZRrHA1JJJW8opsbCGfG_HACGpVUMN_a9IV7pAx_Zmeo")
	f.Fuzz(func(t *testing.T, tok string) {
		c, err := s.Verify(tok, now)
		if err != nil {
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrSignature) && !errors.Is(err, ErrExpired) {
				t.Fatalf("error %v is none of the sentinels", err)
			}
			if !errors.Is(err, ErrExpired) && c != (Claims{}) {
				t.Fatalf("claims %+v returned with %v", c, err)
			}
			if !errors.Is(err, ErrExpired) {
				return
			}
		}
		// Authentic: re-signing must give the same token and the same claims.
		again := s.Sign(c)
		if again != tok {
			t.Fatalf("re-signing %+v gave %q, not the input %q", c, again, tok)
		}
		c2, err2 := s.Verify(again, now)
		if (err == nil) != (err2 == nil) || c2 != c {
			t.Fatalf("re-signed token verifies to %+v, %v; want %+v, %v", c2, err2, c, err)
		}
	})
}

func FuzzSignVerify(f *testing.F) {
	f.Add("run", "step", int64(3), int64(1_700_000_000))
	f.Add("", "", int64(-1), int64(0))
	f.Fuzz(func(t *testing.T, run, step string, seq, exp int64) {
		s := NewSigner(keyA)
		c := Claims{RunID: run, StepKey: step, Seq: seq, Expires: time.Unix(exp, 0).UTC()}
		tok := s.Sign(c)
		got, err := s.Verify(tok, time.Unix(exp, 0).Add(-time.Second))
		if len(tok) > MaxLen {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("over-long token: err = %v, want ErrMalformed", err)
			}
			return
		}
		if err != nil && !errors.Is(err, ErrExpired) {
			t.Fatalf("Verify: %v", err)
		}
		if got.RunID != c.RunID || got.StepKey != c.StepKey || got.Seq != c.Seq || got.Expires.Unix() != exp {
			t.Fatalf("claims = %+v, want %+v", got, c)
		}
	})
}
