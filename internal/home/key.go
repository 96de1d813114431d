package home

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime"
)

// EnvSecretKey names the environment variable that overrides the key file.
const EnvSecretKey = "STEPWISE_SECRET_KEY"

// KeySize is the length in bytes of the server key.
const KeySize = 32

// minKeyText is the shortest $STEPWISE_SECRET_KEY accepted as a passphrase.
const minKeyText = 16

// Key returns the 32-byte server key.
//
// When $STEPWISE_SECRET_KEY is set (non-empty) it is used: 64 hex digits are
// the key itself; any other text of at least 16 bytes is hashed with SHA-256;
// shorter text is an error. Otherwise the key is read from KeyPath, which
// must be a regular file of exactly 32 bytes that only its owner can access
// (mode 0600 or stricter; not checked on Windows). The file is created on
// first use with crypto/rand: written to a temporary file, synced, then
// hard-linked into place, so processes racing to create it all end up with
// the one key that won. Errors never contain key material.
func (h *Home) Key() ([]byte, error) {
	if text := os.Getenv(EnvSecretKey); text != "" {
		return keyFromText(text)
	}
	key, err := h.readKey()
	if !errors.Is(err, fs.ErrNotExist) {
		return key, err
	}
	return h.createKey()
}

// ExistingKey reads the key file without creating it: an error
// satisfying errors.Is(err, fs.ErrNotExist) when there is none. A
// database that replicas share stores the key instead (seeded with this
// one, so that what the home signed stays valid).
func (h *Home) ExistingKey() ([]byte, error) { return h.readKey() }

// NewKey returns a random key of KeySize bytes.
func NewKey() ([]byte, error) {
	key := make([]byte, KeySize)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("home: generate key: %w", err)
	}
	return key, nil
}

// keyFromText turns the value of $STEPWISE_SECRET_KEY into a key.
func keyFromText(text string) ([]byte, error) {
	if len(text) == 2*KeySize {
		if key, err := hex.DecodeString(text); err == nil {
			return key, nil
		}
	}
	if len(text) < minKeyText {
		return nil, fmt.Errorf("home: %s is too short (%d bytes): use 64 hex digits or at least %d bytes", EnvSecretKey, len(text), minKeyText)
	}
	sum := sha256.Sum256([]byte(text))
	return sum[:], nil
}

// readKey reads and checks the key file. A missing file gives an error
// satisfying errors.Is(err, fs.ErrNotExist).
func (h *Home) readKey() ([]byte, error) {
	path := h.KeyPath()
	link, err := os.Lstat(path)
	if err != nil {
		return nil, fmt.Errorf("home: key file: %w", err)
	}
	if !link.Mode().IsRegular() {
		return nil, fmt.Errorf("home: key file %s is not a regular file (%s); remove it or set %s", path, link.Mode().Type(), EnvSecretKey)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("home: key file: %w", err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("home: key file: %w", err)
	}
	if !os.SameFile(link, info) {
		return nil, fmt.Errorf("home: key file %s changed while being opened", path)
	}
	if perm := info.Mode().Perm(); runtime.GOOS != "windows" && perm&0o077 != 0 {
		return nil, fmt.Errorf("home: key file %s has mode %04o, which lets others read it; run: chmod 600 %s", path, perm, path)
	}
	if info.Size() != KeySize {
		return nil, fmt.Errorf("home: key file %s is %d bytes, want %d", path, info.Size(), KeySize)
	}
	key := make([]byte, KeySize)
	if _, err := io.ReadFull(f, key); err != nil {
		return nil, fmt.Errorf("home: read key file %s: %w", path, err)
	}
	return key, nil
}

// createKey writes a new random key unless another process got there first,
// and returns whichever key is in place.
func (h *Home) createKey() ([]byte, error) {
	key, err := NewKey()
	if err != nil {
		return nil, err
	}
	tmp, err := os.CreateTemp(h.Dir, ".key-*.tmp") // mode 0600
	if err != nil {
		return nil, fmt.Errorf("home: create key: %w", err)
	}
	tmpPath := tmp.Name()
	defer os.Remove(tmpPath)
	if err := writeSynced(tmp, key); err != nil {
		return nil, fmt.Errorf("home: write key %s: %w", tmpPath, err)
	}
	// Link fails if the name exists, unlike rename: the first key in place wins.
	if err := os.Link(tmpPath, h.KeyPath()); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return h.readKey()
		}
		return nil, fmt.Errorf("home: install key file: %w", err)
	}
	if err := syncDir(h.Dir); err != nil {
		return nil, fmt.Errorf("home: sync %s: %w", h.Dir, err)
	}
	return key, nil
}

// writeSynced writes data to f, flushes it to stable storage and closes f.
func writeSynced(f *os.File, data []byte) error {
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// syncDir flushes a directory's entries to stable storage. Windows cannot
// sync directories; there it is a no-op.
func syncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
