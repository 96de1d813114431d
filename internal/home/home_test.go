package home

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

func TestResolve(t *testing.T) {
	user := t.TempDir()
	t.Setenv("HOME", user)
	t.Setenv("USERPROFILE", user) // os.UserHomeDir on Windows

	t.Setenv(EnvHome, "")
	if got, err := Resolve(""); err != nil || got != filepath.Join(user, ".stepwise") {
		t.Fatalf("default: Resolve = %q, %v", got, err)
	}

	env := t.TempDir()
	t.Setenv(EnvHome, env+"/x/../sw/")
	if got, err := Resolve(""); err != nil || got != filepath.Join(env, "sw") {
		t.Fatalf("env: Resolve = %q, %v", got, err)
	}

	flag := t.TempDir()
	if got, err := Resolve(flag + "/./f"); err != nil || got != filepath.Join(flag, "f") {
		t.Fatalf("flag: Resolve = %q, %v", got, err)
	}

	wd := t.TempDir()
	t.Chdir(wd)
	got, err := Resolve("rel")
	if err != nil {
		t.Fatal(err)
	}
	// The working directory may itself be reached through a symlink (macOS /var).
	if !filepath.IsAbs(got) || filepath.Base(got) != "rel" {
		t.Fatalf("relative flag: Resolve = %q, want an absolute path ending in rel", got)
	}
}

func TestOpenCreatesDirectories(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "home")
	h, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if h.Dir != dir {
		t.Fatalf("Dir = %q, want %q", h.Dir, dir)
	}
	for _, d := range []string{dir, h.WorkflowsDir()} {
		info, err := os.Stat(d)
		if err != nil || !info.IsDir() {
			t.Fatalf("%s: %v", d, err)
		}
		if runtime.GOOS != "windows" && info.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s has mode %04o, want 0700", d, info.Mode().Perm())
		}
	}
	if h.DBPath() != filepath.Join(dir, "stepwise.db") || h.KeyPath() != filepath.Join(dir, "key") || h.WorkflowsDir() != filepath.Join(dir, "workflows") {
		t.Fatalf("paths: %s %s %s", h.DBPath(), h.KeyPath(), h.WorkflowsDir())
	}
	// Opening again is fine.
	if _, err := Open(dir); err != nil {
		t.Fatalf("second Open: %v", err)
	}
}

func TestOpenFailsOnAFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(file); err == nil {
		t.Fatal("Open on a regular file succeeded")
	}
}
