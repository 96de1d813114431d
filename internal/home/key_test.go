package home

import (
	"bytes"
	"crypto/sha256"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

func openTemp(t *testing.T) *Home {
	t.Helper()
	t.Setenv(EnvSecretKey, "")
	h, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestKeyCreatedOnceAndReused(t *testing.T) {
	h := openTemp(t)
	k1, err := h.Key()
	if err != nil {
		t.Fatal(err)
	}
	if len(k1) != KeySize || bytes.Equal(k1, make([]byte, KeySize)) {
		t.Fatalf("key = %x", k1)
	}
	info, err := os.Stat(h.KeyPath())
	if err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS != "windows" && info.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %04o, want 0600", info.Mode().Perm())
	}
	k2, err := h.Key()
	if err != nil || !bytes.Equal(k1, k2) {
		t.Fatalf("second Key = %x, %v; want %x", k2, err, k1)
	}
	onDisk, _ := os.ReadFile(h.KeyPath())
	if !bytes.Equal(onDisk, k1) {
		t.Fatal("key file does not hold the returned key")
	}
	entries, _ := os.ReadDir(h.Dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".key-") {
			t.Fatalf("temporary file %s left behind", e.Name())
		}
	}
	other, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	k3, err := other.Key()
	if err != nil || bytes.Equal(k3, k1) {
		t.Fatalf("two homes share a key (%v)", err)
	}
}

func TestKeyRacingCreation(t *testing.T) {
	for round := range 20 {
		h := openTemp(t)
		const n = 16
		keys := make([][]byte, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				keys[i], errs[i] = (&Home{Dir: h.Dir}).Key()
			}()
		}
		close(start)
		wg.Wait()
		for i := range n {
			if errs[i] != nil {
				t.Fatalf("round %d goroutine %d: %v", round, i, errs[i])
			}
			if !bytes.Equal(keys[i], keys[0]) {
				t.Fatalf("round %d: goroutines got different keys", round)
			}
		}
		onDisk, _ := os.ReadFile(h.KeyPath())
		if !bytes.Equal(onDisk, keys[0]) {
			t.Fatalf("round %d: key file differs from the returned key", round)
		}
	}
}

func TestKeyFileModeChecked(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no unix modes")
	}
	h := openTemp(t)
	if _, err := h.Key(); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []os.FileMode{0o640, 0o604, 0o644, 0o666} {
		if err := os.Chmod(h.KeyPath(), mode); err != nil {
			t.Fatal(err)
		}
		_, err := h.Key()
		if err == nil || !strings.Contains(err.Error(), "chmod 600") {
			t.Fatalf("mode %04o: err = %v, want a refusal telling how to fix it", mode, err)
		}
	}
	for _, mode := range []os.FileMode{0o600, 0o400} {
		if err := os.Chmod(h.KeyPath(), mode); err != nil {
			t.Fatal(err)
		}
		if _, err := h.Key(); err != nil {
			t.Fatalf("mode %04o: %v", mode, err)
		}
	}
}

func TestKeyFileChecks(t *testing.T) {
	h := openTemp(t)
	if err := os.WriteFile(h.KeyPath(), []byte("short"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Key(); err == nil || !strings.Contains(err.Error(), "5 bytes") {
		t.Fatalf("short key file: err = %v", err)
	}
	if err := os.Remove(h.KeyPath()); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(t.TempDir(), "k")
	if err := os.WriteFile(target, make([]byte, KeySize), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, h.KeyPath()); err != nil {
		t.Skip("symlinks unavailable:", err)
	}
	if _, err := h.Key(); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("symlinked key file: err = %v", err)
	}
}

func TestKeyFromEnv(t *testing.T) {
	h := openTemp(t)
	hexKey := strings.Repeat("0f", KeySize)
	t.Setenv(EnvSecretKey, hexKey)
	k, err := h.Key()
	if err != nil || !bytes.Equal(k, bytes.Repeat([]byte{0x0f}, KeySize)) {
		t.Fatalf("hex key: %x, %v", k, err)
	}
	if _, err := os.Stat(h.KeyPath()); !os.IsNotExist(err) {
		t.Fatal("a key file was created although the env key is set")
	}

	pass := "correct horse battery staple"
	t.Setenv(EnvSecretKey, pass)
	want := sha256.Sum256([]byte(pass))
	if k, err := h.Key(); err != nil || !bytes.Equal(k, want[:]) {
		t.Fatalf("passphrase key: %x, %v", k, err)
	}

	notHex := strings.Repeat("zz", KeySize) // 64 chars but not hex: a passphrase
	t.Setenv(EnvSecretKey, notHex)
	want = sha256.Sum256([]byte(notHex))
	if k, err := h.Key(); err != nil || !bytes.Equal(k, want[:]) {
		t.Fatalf("64-char non-hex key: %x, %v", k, err)
	}

	t.Setenv(EnvSecretKey, "fifteen-bytes!!")
	_, err = h.Key()
	if err == nil || !strings.Contains(err.Error(), "too short") || strings.Contains(err.Error(), "fifteen") {
		t.Fatalf("short env key: err = %v, want 'too short' without the value", err)
	}
	t.Setenv(EnvSecretKey, "sixteen-bytes!!!")
	if _, err := h.Key(); err != nil {
		t.Fatalf("16-byte env key: %v", err)
	}
}
