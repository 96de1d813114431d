package token

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strings"
)

// MaxStateLen is the longest signed state Open accepts, in bytes.
const MaxStateLen = 8192

// stateDerivation derives the state key from the server key: a key of its
// own, so that a state can never pass for a token or the other way round.
const stateDerivation = "stepwise request state v1"

// StateSigner signs opaque state a client carries between two requests
// (an MCP multi round-trip's requestState): any replica with the same
// server key opens it; a state altered, truncated or signed with another
// key is refused. It is safe for concurrent use.
type StateSigner struct{ key []byte }

// NewStateSigner returns a StateSigner for the server key (KeySize bytes).
func NewStateSigner(key []byte) *StateSigner {
	if len(key) != KeySize {
		panic(fmt.Sprintf("token.NewStateSigner: key is %d bytes, want %d", len(key), KeySize))
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(stateDerivation))
	return &StateSigner{key: m.Sum(nil)}
}

func (s *StateSigner) mac(payload string) []byte {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(payload))
	return m.Sum(nil)
}

// Sign returns data as a signed state: base64url(data).base64url(mac).
func (s *StateSigner) Sign(data []byte) string {
	payload := base64.RawURLEncoding.EncodeToString(data)
	return payload + "." + base64.RawURLEncoding.EncodeToString(s.mac(payload))
}

// Open returns the data of a state Sign made with the same key:
// ErrMalformed for anything that is not one, ErrSignature for one altered
// or signed with another key.
func (s *StateSigner) Open(state string) ([]byte, error) {
	if len(state) > MaxStateLen {
		return nil, fmt.Errorf("%w: state longer than %d bytes", ErrMalformed, MaxStateLen)
	}
	payload, sig, ok := strings.Cut(state, ".")
	if !ok {
		return nil, fmt.Errorf("%w: no signature", ErrMalformed)
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || len(got) != macLen {
		return nil, fmt.Errorf("%w: signature", ErrMalformed)
	}
	if !hmac.Equal(got, s.mac(payload)) {
		return nil, ErrSignature
	}
	data, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil {
		return nil, fmt.Errorf("%w: payload", ErrMalformed)
	}
	return data, nil
}
