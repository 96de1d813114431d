package token

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func TestStateSigner(t *testing.T) {
	t.Parallel()
	key := bytes.Repeat([]byte{7}, KeySize)
	s := NewStateSigner(key)
	data := []byte(`{"root":"r1","token":"t"}`)
	state := s.Sign(data)
	got, err := s.Open(state)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("open: %q %v", got, err)
	}
	// Another replica with the same key opens it.
	if got, err := NewStateSigner(key).Open(state); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("open with the same key: %q %v", got, err)
	}
	other := NewStateSigner(bytes.Repeat([]byte{8}, KeySize))
	if _, err := other.Open(state); !errors.Is(err, ErrSignature) {
		t.Fatalf("another key: %v", err)
	}
	payload, sig, _ := strings.Cut(state, ".")
	forged := NewStateSigner(key).Sign([]byte(`{"root":"r2","token":"t"}`))
	forgedPayload, _, _ := strings.Cut(forged, ".")
	for name, bad := range map[string]string{
		"altered payload":   forgedPayload + "." + sig,
		"truncated":         state[:len(state)-3],
		"unsigned":          payload,
		"empty":             "",
		"signature garbage": payload + ".!!!",
		"too long":          strings.Repeat("a", MaxStateLen+1),
	} {
		if _, err := s.Open(bad); !errors.Is(err, ErrSignature) && !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v", name, err)
		}
	}
	// A token never opens as a state, nor a state as a token.
	tok := NewSigner(key).Sign(Claims{RunID: "r", StepKey: "s", Seq: 1})
	if _, err := s.Open(strings.TrimPrefix(tok, prefix)); err == nil {
		t.Fatal("a token opened as a state")
	}
}
