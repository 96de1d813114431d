package secret

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
)

var (
	keyA = bytes.Repeat([]byte{1}, KeySize)
	keyB = bytes.Repeat([]byte{2}, KeySize)
)

func sealer(t testing.TB, key []byte) *Sealer {
	t.Helper()
	s, err := NewSealer(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSealOpenRoundTrip(t *testing.T) {
	t.Parallel()
	s := sealer(t, keyA)
	for _, plain := range [][]byte{nil, []byte(""), []byte("hunter2"), bytes.Repeat([]byte{0, 0xff}, 5000)} {
		sealed, err := s.Seal(plain)
		if err != nil {
			t.Fatal(err)
		}
		if !IsSealed(sealed) || !strings.HasPrefix(sealed, "sealed:v1:") {
			t.Fatalf("Seal gave %q, want the sealed:v1: prefix", sealed)
		}
		if len(plain) >= 3 && strings.Contains(sealed, string(plain)) {
			t.Fatalf("sealed text contains the plaintext")
		}
		got, err := s.Open(sealed)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		if !bytes.Equal(got, plain) {
			t.Fatalf("Open = %q, want %q", got, plain)
		}
	}
}

func TestSealUsesFreshNonces(t *testing.T) {
	t.Parallel()
	s := sealer(t, keyA)
	seen := map[string]bool{}
	for range 100 {
		sealed, err := s.Seal([]byte("same text"))
		if err != nil {
			t.Fatal(err)
		}
		if seen[sealed] {
			t.Fatalf("two seals of the same text are equal: %s", sealed)
		}
		seen[sealed] = true
	}
}

func TestOpenDetectsTampering(t *testing.T) {
	t.Parallel()
	s := sealer(t, keyA)
	sealed, err := s.Seal([]byte("the launch codes"))
	if err != nil {
		t.Fatal(err)
	}
	for i := len(SealedPrefix); i < len(sealed); i++ {
		for _, r := range []byte("AQgw-_z\n=") {
			if r == sealed[i] {
				continue
			}
			bad := sealed[:i] + string(r) + sealed[i+1:]
			if _, err := s.Open(bad); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("byte %d changed to %q: err = %v, want ErrCorrupt", i, r, err)
			}
		}
	}
	for _, bad := range []string{SealedPrefix, SealedPrefix + "AAAA", sealed[:len(sealed)-1], sealed + "A", sealed + "\n"} {
		if _, err := s.Open(bad); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("Open(%q): err = %v, want ErrCorrupt", bad, err)
		}
	}
}

func TestOpenWithWrongKey(t *testing.T) {
	t.Parallel()
	sealed, err := sealer(t, keyA).Seal([]byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sealer(t, keyB).Open(sealed); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("err = %v, want ErrCorrupt", err)
	}
}

func TestOpenNotSealed(t *testing.T) {
	t.Parallel()
	s := sealer(t, keyA)
	for _, text := range []string{"", "hunter2", "$TOKEN", "sealed:v2:AAAA", "SEALED:v1:AAAA"} {
		_, err := s.Open(text)
		if !errors.Is(err, ErrNotSealed) {
			t.Fatalf("Open(%q): err = %v, want ErrNotSealed", text, err)
		}
		if text != "" && strings.Contains(err.Error(), text) {
			t.Fatalf("error %q echoes the input", err)
		}
		if IsSealed(text) {
			t.Fatalf("IsSealed(%q) = true", text)
		}
	}
}

func TestNewSealerKeySize(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 16, 31, 33} {
		if _, err := NewSealer(make([]byte, n)); err == nil {
			t.Errorf("NewSealer accepted a %d-byte key", n)
		}
	}
}

func TestSealKeyIsDerived(t *testing.T) {
	t.Parallel()
	// A value sealed by a Sealer must not open with the server key used
	// directly as the AES key: the AES key is derived from it.
	sealed, err := sealer(t, keyA).Seal([]byte("derived"))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(sealed, SealedPrefix))
	if err != nil {
		t.Fatal(err)
	}
	block, err := aes.NewCipher(keyA)
	if err != nil {
		t.Fatal(err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := aead.Open(nil, raw[:12], raw[12:], []byte(SealedPrefix)); err == nil {
		t.Fatal("sealed value opens with the underived server key")
	}
}
