//go:build linux

package mcpserver

import (
	"os"
	"path/filepath"
	"testing"
)

// A pipe's room is known only while it is empty; other files have none.
func TestPipeRoom(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	room := pipeRoom(w)
	if room == nil {
		t.Fatal("no room check for a pipe")
	}
	if !room(1) || !room(16<<10) {
		t.Error("an empty pipe has no room for 16 KB")
	}
	if room(1 << 20) {
		t.Error("a pipe has room for 1 MB")
	}
	if _, err := w.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if room(1) {
		t.Error("room known in a pipe holding unread bytes")
	}
	if _, err := r.Read(make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	if !room(1) {
		t.Error("a pipe read empty has no room")
	}
	f, err := os.Create(filepath.Join(t.TempDir(), "file"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if pipeRoom(f) != nil {
		t.Error("a regular file has a pipe's room check")
	}
}
