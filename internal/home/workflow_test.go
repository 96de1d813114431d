package home

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func write(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("version: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestValidName(t *testing.T) {
	for _, n := range []string{"a", "0", "deploy", "deploy-prod_2", strings.Repeat("a", 64)} {
		if !ValidName(n) {
			t.Errorf("ValidName(%q) = false", n)
		}
	}
	for _, n := range []string{"", "-a", "_a", "A", "a.b", "a/b", "..", ".", "a b", strings.Repeat("a", 65), "ä", "a\x00"} {
		if ValidName(n) {
			t.Errorf("ValidName(%q) = true", n)
		}
	}
}

func TestFindWorkflowLibrary(t *testing.T) {
	h := openTemp(t)
	write(t, filepath.Join(h.WorkflowsDir(), "deploy.yml"))
	write(t, filepath.Join(h.WorkflowsDir(), "both.json"))
	write(t, filepath.Join(h.WorkflowsDir(), "both.yaml"))
	write(t, filepath.Join(h.WorkflowsDir(), "data.json"))

	cases := map[string]string{"deploy": "deploy.yml", "both": "both.yaml", "data": "data.json"}
	for ref, file := range cases {
		got, err := h.FindWorkflow(ref)
		if err != nil || got != filepath.Join(h.WorkflowsDir(), file) {
			t.Errorf("FindWorkflow(%q) = %q, %v; want %s", ref, got, err, file)
		}
	}
}

func TestFindWorkflowNotFound(t *testing.T) {
	h := openTemp(t)
	_, err := h.FindWorkflow("missing")
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("err = %v, want ErrNotFound", err)
	}
	for _, name := range []string{"missing.yaml", "missing.yml", "missing.json"} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("error %q does not list %s", err, name)
		}
	}
	// A directory with a workflow's name is not a workflow.
	if err := os.Mkdir(filepath.Join(h.WorkflowsDir(), "dir.yaml"), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := h.FindWorkflow("dir"); err == nil {
		t.Fatal("a directory was returned as a workflow")
	}
}

func TestFindWorkflowUnsafeNames(t *testing.T) {
	h := openTemp(t)
	for _, ref := range []string{"", "..", ".", "Deploy", "-x", "a b", "deploy.yml.bak", "~root", "a\x00", strings.Repeat("a", 65)} {
		if _, err := h.FindWorkflow(ref); !errors.Is(err, ErrUnsafeName) {
			t.Errorf("FindWorkflow(%q): err = %v, want ErrUnsafeName", ref, err)
		}
	}
}

func TestFindWorkflowPaths(t *testing.T) {
	h := openTemp(t)
	dir := t.TempDir()
	abs := filepath.Join(dir, "flow.yaml")
	write(t, abs)
	write(t, filepath.Join(dir, "noext"))

	if got, err := h.FindWorkflow(abs); err != nil || got != abs {
		t.Fatalf("absolute path: %q, %v", got, err)
	}
	t.Chdir(dir)
	if got, err := h.FindWorkflow("flow.yaml"); err != nil || got != "flow.yaml" {
		t.Fatalf("bare file name with extension: %q, %v", got, err)
	}
	if got, err := h.FindWorkflow("./noext"); err != nil || got != "./noext" {
		t.Fatalf("relative path without extension: %q, %v", got, err)
	}
	// A file without separator or extension is a library name, not a file in the working directory.
	if _, err := h.FindWorkflow("noext"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("noext: err = %v, want ErrNotFound from the library", err)
	}
	for _, ref := range []string{"nope.yaml", "./nope", filepath.Join(dir, "nope.json")} {
		if _, err := h.FindWorkflow(ref); !errors.Is(err, ErrNotFound) {
			t.Errorf("FindWorkflow(%q): err = %v, want ErrNotFound", ref, err)
		}
	}
	if _, err := h.FindWorkflow(dir + string(filepath.Separator)); err == nil {
		t.Error("a directory path was returned as a workflow")
	}
}

func TestFindWorkflowSymlinks(t *testing.T) {
	h := openTemp(t)
	outside := filepath.Join(t.TempDir(), "secret.yaml")
	write(t, outside)
	inside := filepath.Join(h.WorkflowsDir(), "sub", "real.yaml")
	write(t, inside)
	if err := os.Symlink(outside, filepath.Join(h.WorkflowsDir(), "escape.yaml")); err != nil {
		t.Skip("symlinks unavailable:", err)
	}
	if err := os.Symlink(filepath.Join("sub", "real.yaml"), filepath.Join(h.WorkflowsDir(), "alias.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join("..", "key"), filepath.Join(h.WorkflowsDir(), "dotdot.json")); err != nil {
		t.Fatal(err)
	}
	write(t, h.KeyPath())

	if _, err := h.FindWorkflow("escape"); !errors.Is(err, ErrUnsafeName) {
		t.Fatalf("symlink outside: err = %v, want ErrUnsafeName", err)
	}
	if _, err := h.FindWorkflow("dotdot"); !errors.Is(err, ErrUnsafeName) {
		t.Fatalf("relative symlink outside: err = %v, want ErrUnsafeName", err)
	}
	if got, err := h.FindWorkflow("alias"); err != nil || got != filepath.Join(h.WorkflowsDir(), "alias.yaml") {
		t.Fatalf("symlink inside: %q, %v", got, err)
	}

	// The workflows directory itself may be a symlink (e.g. to a synced folder).
	h2 := openTemp(t)
	lib := t.TempDir()
	write(t, filepath.Join(lib, "shared.yaml"))
	if err := os.Remove(h2.WorkflowsDir()); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(lib, h2.WorkflowsDir()); err != nil {
		t.Fatal(err)
	}
	if _, err := h2.FindWorkflow("shared"); err != nil {
		t.Fatalf("symlinked workflows dir: %v", err)
	}
}
