package token

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"
)

// KeySize is the length in bytes of the server key NewSigner accepts.
const KeySize = 32

// MaxLen is the longest token Verify accepts, in bytes. Longer input is
// rejected with ErrMalformed before any decoding. Claims whose run ID and
// step key together exceed about 1,450 bytes produce tokens longer than this.
const MaxLen = 2048

// prefix starts every token and names the format version.
const prefix = "sw1."

// derivation is the HMAC message that derives the token key from the server key.
const derivation = "stepwise token v1"

// macLen is the length of an HMAC-SHA256.
const macLen = sha256.Size

// Errors returned by Verify; test for them with errors.Is.
var (
	// ErrMalformed: the input is not a token (wrong prefix, bad base64,
	// bad payload, too long).
	ErrMalformed = errors.New("malformed token")
	// ErrSignature: the token was tampered with or signed with another key.
	ErrSignature = errors.New("invalid token signature")
	// ErrExpired: the token is authentic but its expiry has passed.
	ErrExpired = errors.New("token expired")
)

// Claims are what a token asserts.
type Claims struct {
	// RunID identifies the paused run.
	RunID string
	// StepKey identifies the paused step within the run.
	StepKey string
	// Seq is the run's sequence number when the token was issued.
	Seq int64
	// Expires is when the token stops being valid (second precision).
	Expires time.Time
}

// Signer signs and verifies tokens with one key. It is safe for concurrent use.
type Signer struct {
	key []byte
}

// NewSigner returns a Signer for the server key, which must be KeySize
// (32) bytes long; any other length is a programming error and panics.
// The key used for the HMAC is derived from it (see the package comment).
func NewSigner(key []byte) *Signer {
	if len(key) != KeySize {
		panic(fmt.Sprintf("token.NewSigner: key is %d bytes, want %d", len(key), KeySize))
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(derivation))
	return &Signer{key: m.Sum(nil)}
}

// Sign returns the token for the claims.
func (s *Signer) Sign(c Claims) string {
	payload := base64.RawURLEncoding.EncodeToString(encodeClaims(c))
	signed := prefix + payload
	return signed + "." + base64.RawURLEncoding.EncodeToString(s.mac(signed))
}

// Verify checks tok and returns its claims. The error wraps ErrMalformed,
// ErrSignature or ErrExpired. For ErrExpired the authentic claims are
// returned too, so the caller can tell which run the token was for; for the
// other errors the claims are zero. Verify never panics.
func (s *Signer) Verify(tok string, now time.Time) (Claims, error) {
	if len(tok) > MaxLen {
		return Claims{}, fmt.Errorf("%w: %d bytes, at most %d", ErrMalformed, len(tok), MaxLen)
	}
	if !strings.HasPrefix(tok, prefix) {
		return Claims{}, fmt.Errorf("%w: does not start with %q", ErrMalformed, prefix)
	}
	rest := tok[len(prefix):]
	dot := strings.IndexByte(rest, '.')
	if dot < 0 {
		return Claims{}, fmt.Errorf("%w: no signature part", ErrMalformed)
	}
	payloadText, macText := rest[:dot], rest[dot+1:]
	signed := tok[:len(prefix)+dot]
	if !isBase64URL(payloadText) || !isBase64URL(macText) {
		return Claims{}, fmt.Errorf("%w: not two base64url parts after %q", ErrMalformed, prefix)
	}
	payload, err := base64.RawURLEncoding.Strict().DecodeString(payloadText)
	if err != nil {
		return Claims{}, fmt.Errorf("%w: payload: %v", ErrMalformed, err)
	}
	mac, err := base64.RawURLEncoding.Strict().DecodeString(macText)
	if err != nil {
		return Claims{}, fmt.Errorf("%w: signature: %v", ErrMalformed, err)
	}
	if len(mac) != macLen {
		return Claims{}, fmt.Errorf("%w: signature is %d bytes, want %d", ErrMalformed, len(mac), macLen)
	}
	if !hmac.Equal(mac, s.mac(signed)) {
		return Claims{}, ErrSignature
	}
	c, err := decodeClaims(payload)
	if err != nil {
		return Claims{}, fmt.Errorf("%w: payload: %v", ErrMalformed, err)
	}
	if !now.Before(c.Expires) {
		return c, fmt.Errorf("%w: run %q step %q expired at %s", ErrExpired, c.RunID, c.StepKey, c.Expires.Format(time.RFC3339))
	}
	return c, nil
}

// mac returns HMAC-SHA256 of text under the derived key.
func (s *Signer) mac(text string) []byte {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(text))
	return m.Sum(nil)
}

// isBase64URL reports whether s is non-empty and made only of the base64url
// alphabet. The standard decoder silently skips '\r' and '\n'; checking the
// alphabet first keeps a token's text and its meaning one-to-one.
func isBase64URL(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '-', c == '_':
		default:
			return false
		}
	}
	return true
}
