package action

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func fileRun(t *testing.T, ws *Workspace, in map[string]any) (map[string]any, error) {
	t.Helper()
	out, err := File{Workspace: ws}.Run(context.Background(), Call{Input: in})
	if err != nil {
		return nil, err
	}
	return out.(map[string]any), nil
}

func fileOK(t *testing.T, ws *Workspace, in map[string]any) map[string]any {
	t.Helper()
	out, err := fileRun(t, ws, in)
	if err != nil {
		t.Fatalf("%v: %v", in, err)
	}
	return out
}

// Every operation refuses every escaping path, and nothing outside changes.
func TestFileRefusesPathsOutsideForEveryOp(t *testing.T) {
	s := newSandbox(t)
	for _, op := range []string{"read", "write", "append", "list", "delete", "exists", "mkdir"} {
		for what, p := range s.escapes() {
			in := map[string]any{"op": op, "path": p, "content": "pwned", "recursive": true}
			out, err := fileRun(t, s.ws, in)
			if !errors.Is(err, ErrOutsideWorkspace) || Retryable(err) {
				t.Errorf("%s %s (%s): %v, %v", op, what, p, out, err)
			}
		}
	}
	s.untouched(t)
	if _, err := os.Lstat(filepath.Join(s.ws.Dir, "link-dir")); err != nil {
		t.Errorf("a refused delete removed the link: %v", err)
	}
}

func TestFileWriteReadAppend(t *testing.T) {
	ws := newSandbox(t).ws
	out := fileOK(t, ws, map[string]any{"op": "write", "path": "a/b/c.txt", "content": "hello"})
	if out["path"] != "a/b/c.txt" || out["size"] != 5 {
		t.Fatalf("write: %v", out)
	}
	fileOK(t, ws, map[string]any{"op": "append", "path": "a/b/c.txt", "content": " world"})
	out = fileOK(t, ws, map[string]any{"op": "read", "path": "./a/b/../b/c.txt"})
	if out["content"] != "hello world" || out["size"] != 11 || out["path"] != "a/b/c.txt" {
		t.Fatalf("read: %v", out)
	}
	// A JSON value is written as JSON.
	fileOK(t, ws, map[string]any{"op": "write", "path": "v.json", "content": map[string]any{"n": 1, "l": []any{"x"}}})
	data, _ := os.ReadFile(filepath.Join(ws.Real, "v.json"))
	if string(data) != "{\n  \"l\": [\n    \"x\"\n  ],\n  \"n\": 1\n}\n" {
		t.Fatalf("json: %q", data)
	}
	// Binary content round-trips through base64.
	fileOK(t, ws, map[string]any{"op": "write", "path": "bin", "content": "AP8A", "encoding": "base64"})
	if _, err := fileRun(t, ws, map[string]any{"op": "read", "path": "bin"}); err == nil || !strings.Contains(err.Error(), "base64") {
		t.Fatalf("binary read as text: %v", err)
	}
	out = fileOK(t, ws, map[string]any{"op": "read", "path": "bin", "encoding": "base64"})
	if out["content"] != "AP8A" || out["size"] != 3 {
		t.Fatalf("base64: %v", out)
	}
	// max_bytes bounds a read.
	if _, err := fileRun(t, ws, map[string]any{"op": "read", "path": "a/b/c.txt", "max_bytes": 10}); err == nil || !strings.Contains(err.Error(), "max_bytes") {
		t.Fatalf("max_bytes: %v", err)
	}
	if _, err := fileRun(t, ws, map[string]any{"op": "read", "path": "missing"}); err == nil || Retryable(err) {
		t.Fatalf("missing: %v", err)
	}
	if _, err := fileRun(t, ws, map[string]any{"op": "write", "path": "a", "content": "x"}); err == nil {
		t.Fatal("a directory was overwritten")
	}
}

func TestFileWriteIsAtomicAndKeepsTheMode(t *testing.T) {
	ws := newSandbox(t).ws
	p := filepath.Join(ws.Real, "f")
	if err := os.WriteFile(p, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	fileOK(t, ws, map[string]any{"op": "write", "path": "f", "content": "new"})
	info, err := os.Stat(p)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("mode: %v %v", info.Mode(), err)
	}
	entries, _ := os.ReadDir(ws.Real)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temporary file left: %s", e.Name())
		}
	}
	// Through a symlink inside, the target is written and the link kept.
	if err := os.Symlink("f", filepath.Join(ws.Real, "alias")); err != nil {
		t.Fatal(err)
	}
	fileOK(t, ws, map[string]any{"op": "write", "path": "alias", "content": "via link"})
	if data, _ := os.ReadFile(p); string(data) != "via link" {
		t.Fatalf("target: %q", data)
	}
	if info, err := os.Lstat(filepath.Join(ws.Real, "alias")); err != nil || info.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link was replaced: %v", err)
	}
}

func TestFileListDeleteExistsMkdir(t *testing.T) {
	ws := newSandbox(t).ws
	out := fileOK(t, ws, map[string]any{"op": "mkdir", "path": "d/e"})
	if out["created"] != true {
		t.Fatalf("mkdir: %v", out)
	}
	if out := fileOK(t, ws, map[string]any{"op": "mkdir", "path": "d/e"}); out["created"] != false {
		t.Fatalf("mkdir again: %v", out)
	}
	fileOK(t, ws, map[string]any{"op": "write", "path": "d/e/f.txt", "content": "abc"})
	fileOK(t, ws, map[string]any{"op": "write", "path": "d/g.txt", "content": "x"})

	names := func(out map[string]any) string {
		var ns []string
		for _, e := range out["entries"].([]any) {
			m := e.(map[string]any)
			ns = append(ns, m["name"].(string)+":"+m["type"].(string))
		}
		return strings.Join(ns, ",")
	}
	if got := names(fileOK(t, ws, map[string]any{"op": "list", "path": "d"})); got != "e:dir,g.txt:file" {
		t.Fatalf("list: %s", got)
	}
	list := fileOK(t, ws, map[string]any{"op": "list", "path": "d", "recursive": true})
	if got := names(list); got != "e:dir,e/f.txt:file,g.txt:file" || list["truncated"] != false {
		t.Fatalf("list recursive: %s %v", got, list)
	}
	if e := list["entries"].([]any)[1].(map[string]any); e["size"] != int64(3) {
		t.Fatalf("size: %v", e)
	}
	if _, err := fileRun(t, ws, map[string]any{"op": "list", "path": "d/g.txt"}); err == nil {
		t.Fatal("listed a file")
	}
	if out := fileOK(t, ws, map[string]any{"op": "exists", "path": "d/g.txt"}); out["exists"] != true || out["type"] != "file" {
		t.Fatalf("exists: %v", out)
	}
	if _, err := fileRun(t, ws, map[string]any{"op": "delete", "path": "d"}); err == nil || !strings.Contains(err.Error(), "recursive") {
		t.Fatalf("delete a full directory: %v", err)
	}
	if out := fileOK(t, ws, map[string]any{"op": "delete", "path": "d", "recursive": true}); out["deleted"] != true {
		t.Fatalf("delete: %v", out)
	}
	if out := fileOK(t, ws, map[string]any{"op": "exists", "path": "d"}); out["exists"] != false {
		t.Fatalf("exists after delete: %v", out)
	}
	if out := fileOK(t, ws, map[string]any{"op": "delete", "path": "d"}); out["deleted"] != false {
		t.Fatalf("delete again: %v", out)
	}
	if _, err := fileRun(t, ws, map[string]any{"op": "delete", "path": ".", "recursive": true}); err == nil {
		t.Fatal("deleted the workspace")
	}
	// Deleting a symlink inside removes the link, not its target.
	fileOK(t, ws, map[string]any{"op": "write", "path": "t.txt", "content": "keep"})
	if err := os.Symlink("t.txt", filepath.Join(ws.Real, "l")); err != nil {
		t.Fatal(err)
	}
	fileOK(t, ws, map[string]any{"op": "delete", "path": "l"})
	if data, err := os.ReadFile(filepath.Join(ws.Real, "t.txt")); err != nil || string(data) != "keep" {
		t.Fatalf("target: %q %v", data, err)
	}
}

func TestFileInputSchema(t *testing.T) {
	r := NewRegistry(File{})
	f, _ := r.Get("file")
	if vs := r.CheckInput(f, map[string]any{"op": "write", "path": "x"}); len(vs) != 1 || !strings.Contains(vs[0].Message, "content") {
		t.Fatalf("write without content: %v", vs)
	}
	if vs := r.CheckInput(f, map[string]any{"op": "read", "path": "x", "max_bytes": 5}); len(vs) != 0 {
		t.Fatalf("read: %v", vs)
	}
	if vs := r.CheckInput(f, map[string]any{"op": "move", "path": "x", "to": "y"}); len(vs) != 2 {
		t.Fatalf("bad op and key: %v", vs)
	}
}
