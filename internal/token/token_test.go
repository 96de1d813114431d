package token

import (
	"bytes"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"
)

var (
	keyA = bytes.Repeat([]byte{0xA5}, KeySize)
	keyB = bytes.Repeat([]byte{0x5A}, KeySize)
	now  = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
)

func sample() Claims {
	return Claims{RunID: "run_01J9ZQ", StepKey: "approve/0", Seq: 7, Expires: now.Add(time.Hour)}
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	s := NewSigner(keyA)
	c := sample()
	c.Expires = c.Expires.Add(750 * time.Millisecond) // dropped: second precision
	tok := s.Sign(c)
	if !strings.HasPrefix(tok, "sw1.") || strings.Count(tok, ".") != 2 {
		t.Fatalf("token %q does not have the sw1.<payload>.<mac> shape", tok)
	}
	got, err := s.Verify(tok, now)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	want := sample()
	if got.RunID != want.RunID || got.StepKey != want.StepKey || got.Seq != want.Seq || !got.Expires.Equal(want.Expires) {
		t.Fatalf("claims = %+v, want %+v", got, want)
	}
	if got.Expires.Location() != time.UTC {
		t.Errorf("Expires location = %v, want UTC", got.Expires.Location())
	}
}

func TestSignIsDeterministic(t *testing.T) {
	t.Parallel()
	s := NewSigner(keyA)
	if a, b := s.Sign(sample()), s.Sign(sample()); a != b {
		t.Fatalf("same claims gave two tokens:\n%s\n%s", a, b)
	}
}

func TestMACCoversPrefixAndPayloadText(t *testing.T) {
	t.Parallel()
	// The documented format, recomputed independently of Sign.
	s := NewSigner(keyA)
	tok := s.Sign(sample())
	i := strings.LastIndexByte(tok, '.')
	mac, err := base64.RawURLEncoding.DecodeString(tok[i+1:])
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(mac, s.mac(tok[:i])) {
		t.Fatal("mac is not HMAC over the text before the second dot")
	}
}

func TestTamperingAnyByteFails(t *testing.T) {
	t.Parallel()
	s := NewSigner(keyA)
	tok := s.Sign(sample())
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.\n="
	for i := 0; i < len(tok); i++ {
		for _, r := range []byte(alphabet) {
			if r == tok[i] {
				continue
			}
			bad := tok[:i] + string(r) + tok[i+1:]
			c, err := s.Verify(bad, now)
			if err == nil {
				t.Fatalf("byte %d changed %q→%q still verifies: %+v", i, tok[i], r, c)
			}
			if errors.Is(err, ErrExpired) {
				t.Fatalf("byte %d changed: got ErrExpired, want malformed or signature", i)
			}
			if c != (Claims{}) {
				t.Fatalf("byte %d changed: claims returned with error %v", i, err)
			}
		}
	}
	// Insertions and truncations fail too.
	for i := 0; i <= len(tok); i++ {
		if _, err := s.Verify(tok[:i]+"\n"+tok[i:], now); err == nil {
			t.Fatalf("newline inserted at %d still verifies", i)
		}
		if i < len(tok) {
			if _, err := s.Verify(tok[:i], now); err == nil {
				t.Fatalf("truncation to %d bytes still verifies", i)
			}
		}
	}
}

func TestOtherKeyFails(t *testing.T) {
	t.Parallel()
	tok := NewSigner(keyB).Sign(sample())
	if _, err := NewSigner(keyA).Verify(tok, now); !errors.Is(err, ErrSignature) {
		t.Fatalf("token from another key: err = %v, want ErrSignature", err)
	}
}

func TestDerivedKeyIsNotTheServerKey(t *testing.T) {
	t.Parallel()
	// A plain HMAC with the server key itself must not verify: the key is derived.
	s := NewSigner(keyA)
	tok := s.Sign(sample())
	i := strings.LastIndexByte(tok, '.')
	raw := &Signer{key: keyA}
	forged := tok[:i] + "." + base64.RawURLEncoding.EncodeToString(raw.mac(tok[:i]))
	if _, err := s.Verify(forged, now); !errors.Is(err, ErrSignature) {
		t.Fatalf("token MACed with the raw server key: err = %v, want ErrSignature", err)
	}
}

func TestExpired(t *testing.T) {
	t.Parallel()
	s := NewSigner(keyA)
	c := sample()
	tok := s.Sign(c)
	for _, at := range []time.Time{c.Expires, c.Expires.Add(time.Second), c.Expires.Add(24 * time.Hour)} {
		got, err := s.Verify(tok, at)
		if !errors.Is(err, ErrExpired) {
			t.Fatalf("at %v: err = %v, want ErrExpired", at, err)
		}
		if got.RunID != c.RunID || got.StepKey != c.StepKey || got.Seq != c.Seq {
			t.Fatalf("expired token returned claims %+v, want %+v", got, c)
		}
		if !strings.Contains(err.Error(), c.RunID) {
			t.Errorf("expiry error %q does not name the run", err)
		}
	}
	if _, err := s.Verify(tok, c.Expires.Add(-time.Nanosecond)); err != nil {
		t.Fatalf("just before expiry: %v", err)
	}
	zero := s.Sign(Claims{RunID: "r"})
	if _, err := s.Verify(zero, now); !errors.Is(err, ErrExpired) {
		t.Fatalf("zero Expires: err = %v, want ErrExpired", err)
	}
}

func TestMalformed(t *testing.T) {
	t.Parallel()
	s := NewSigner(keyA)
	good := s.Sign(sample())
	payload := strings.Split(good, ".")[1]
	mac := strings.Split(good, ".")[2]
	cases := map[string]string{
		"empty":           "",
		"prefix only":     "sw1.",
		"no dots":         "sw1",
		"one part":        "sw1." + payload,
		"empty payload":   "sw1.." + mac,
		"empty mac":       "sw1." + payload + ".",
		"other version":   "sw2." + payload + "." + mac,
		"three parts":     good + ".AAAA",
		"padding":         good + "=",
		"std alphabet":    "sw1.+/+/." + mac,
		"short mac":       "sw1." + payload + "." + mac[:20],
		"long mac":        "sw1." + payload + "." + mac + "AAAA",
		"bad pad bits":    "sw1." + payload + "." + mac[:len(mac)-1] + "B", // 43rd char keeps only 4 bits
		"too long":        good + strings.Repeat("A", MaxLen),
		"jwt":             "eyJhbGciOiJIUzI1NiJ9.e30.ZRrHA1JJJW8opsbCGfG_HACGpVUMN_a9IV7pAx_Zmeo",
		"unicode":         "sw1.ü." + mac,
		"nul":             "sw1.\x00." + mac,
		"space in middle": "sw1." + payload + " ." + mac,
	}
	for name, tok := range cases {
		t.Run(name, func(t *testing.T) {
			c, err := s.Verify(tok, now)
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("err = %v, want ErrMalformed", err)
			}
			if c != (Claims{}) {
				t.Fatalf("claims %+v returned with an error", c)
			}
		})
	}
}

func TestBadPayloadUnderValidMAC(t *testing.T) {
	t.Parallel()
	// A payload that is authentic but not a canonical encoding is malformed.
	s := NewSigner(keyA)
	canonical := encodeClaims(sample())
	payloads := map[string][]byte{
		"trailing byte":  append(append([]byte{}, canonical...), 0),
		"truncated":      canonical[:len(canonical)-1],
		"length too big": {0x7f, 'a'},
		"empty":          {},
		"non-minimal":    append([]byte{0x80, 0x00}, canonical[1:]...), // uvarint 0 in two bytes
	}
	for name, p := range payloads {
		t.Run(name, func(t *testing.T) {
			signed := prefix + base64.RawURLEncoding.EncodeToString(p)
			tok := signed + "." + base64.RawURLEncoding.EncodeToString(s.mac(signed))
			if _, err := s.Verify(tok, now); !errors.Is(err, ErrMalformed) {
				t.Fatalf("err = %v, want ErrMalformed", err)
			}
		})
	}
}

func TestNewSignerRejectsWrongKeySize(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 16, 31, 33, 64} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("NewSigner with a %d-byte key did not panic", n)
				}
			}()
			NewSigner(make([]byte, n))
		}()
	}
}

func TestMaxLenFitsLongIDs(t *testing.T) {
	t.Parallel()
	// The documented budget: ~1,450 bytes of run ID plus step key still verify.
	s := NewSigner(keyA)
	c := Claims{RunID: strings.Repeat("r", 725), StepKey: strings.Repeat("s", 725), Seq: 1 << 62, Expires: now.Add(time.Hour)}
	tok := s.Sign(c)
	if len(tok) > MaxLen {
		t.Fatalf("token for 1,450 bytes of ids is %d bytes, over MaxLen", len(tok))
	}
	if _, err := s.Verify(tok, now); err != nil {
		t.Fatal(err)
	}
}

func BenchmarkSignVerify(b *testing.B) {
	s := NewSigner(keyA)
	c := sample()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Verify(s.Sign(c), now); err != nil {
			b.Fatal(err)
		}
	}
}
