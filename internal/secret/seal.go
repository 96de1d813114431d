package secret

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// KeySize is the length in bytes of the server key NewSealer accepts.
const KeySize = 32

// SealedPrefix starts every sealed value and names the format version.
const SealedPrefix = "sealed:v1:"

// sealDerivation is the HMAC message that derives the AES key from the server key.
const sealDerivation = "stepwise seal v1"

// Errors returned by Open; test for them with errors.Is.
var (
	// ErrNotSealed: the text does not start with SealedPrefix.
	ErrNotSealed = errors.New("not a sealed value")
	// ErrCorrupt: the sealed value is damaged, tampered with or sealed with
	// another key (these cannot be told apart).
	ErrCorrupt = errors.New("corrupt sealed value")
)

// Sealer encrypts and decrypts secrets with one key. It is safe for concurrent use.
type Sealer struct {
	aead cipher.AEAD
}

// NewSealer returns a Sealer for the server key, which must be KeySize (32) bytes.
func NewSealer(key []byte) (*Sealer, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("secret: server key is %d bytes, want %d", len(key), KeySize)
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(sealDerivation))
	block, err := aes.NewCipher(m.Sum(nil))
	if err != nil {
		return nil, fmt.Errorf("secret: aes: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("secret: gcm: %w", err)
	}
	return &Sealer{aead: aead}, nil
}

// Seal encrypts plaintext under a fresh random 12-byte nonce and returns
// SealedPrefix + base64url-without-padding(nonce || ciphertext || tag).
// The prefix is authenticated as additional data. Sealing the same text
// twice gives different results.
func (s *Sealer) Seal(plaintext []byte) (string, error) {
	n := s.aead.NonceSize()
	buf := make([]byte, n, n+len(plaintext)+s.aead.Overhead())
	if _, err := rand.Read(buf); err != nil {
		return "", fmt.Errorf("secret: nonce: %w", err)
	}
	buf = s.aead.Seal(buf, buf, plaintext, []byte(SealedPrefix))
	return SealedPrefix + base64.RawURLEncoding.EncodeToString(buf), nil
}

// Open decrypts a value made by Seal. The error wraps ErrNotSealed when the
// text is not a sealed value and ErrCorrupt when it cannot be decrypted; it
// never contains the text itself.
func (s *Sealer) Open(sealed string) ([]byte, error) {
	if !IsSealed(sealed) {
		return nil, fmt.Errorf("secret: open: %w", ErrNotSealed)
	}
	body := sealed[len(SealedPrefix):]
	if !isBase64URL(body) {
		return nil, fmt.Errorf("secret: open: %w: not base64url", ErrCorrupt)
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(body)
	if err != nil {
		return nil, fmt.Errorf("secret: open: %w: %v", ErrCorrupt, err)
	}
	n := s.aead.NonceSize()
	if len(raw) < n+s.aead.Overhead() {
		return nil, fmt.Errorf("secret: open: %w: %d bytes is too short", ErrCorrupt, len(raw))
	}
	plain, err := s.aead.Open(nil, raw[:n], raw[n:], []byte(SealedPrefix))
	if err != nil {
		return nil, fmt.Errorf("secret: open: %w: authentication failed (tampered or another key)", ErrCorrupt)
	}
	return plain, nil
}

// IsSealed reports whether s has the form of a sealed value (it starts with
// SealedPrefix); it does not check that s can be opened.
func IsSealed(s string) bool {
	return strings.HasPrefix(s, SealedPrefix)
}

// isBase64URL reports whether s is made only of the base64url alphabet.
// The standard decoder silently skips '\r' and '\n'; checking first keeps a
// sealed text and its meaning one-to-one.
func isBase64URL(s string) bool {
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
