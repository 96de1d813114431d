//go:build unix

package main

import (
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A save killed (SIGKILL) at a random moment leaves the library file
// whole: the old content or the new one, never a mix, never missing.
func TestSaveKilledAtRandomMoments(t *testing.T) {
	bin := sharedBinary(t)
	home := t.TempDir()
	dir := t.TempDir()
	contents := [2]string{}
	files := [2]string{}
	for i := range 2 {
		// Different sizes, so that a torn write would show.
		contents[i] = "version: 1\nname: crashy\ntitle: version " + strings.Repeat("ab", 1+i*4000) + "\nsteps:\n  - id: a\n    uses: log\n    with: {message: hi}\n"
		files[i] = filepath.Join(dir, []string{"a.yaml", "b.yaml"}[i])
		if err := os.WriteFile(files[i], []byte(contents[i]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := exec.Command(bin, "--home", home, "save", files[0]).CombinedOutput(); err != nil {
		t.Fatalf("first save: %v %s", err, out)
	}
	target := filepath.Join(home, "workflows", "crashy.yaml")
	killed := 0
	for i := range 40 {
		cmd := exec.Command(bin, "--home", home, "save", "--overwrite", files[(i+1)%2])
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(rand.IntN(30_000)) * time.Microsecond)
		if cmd.Process.Signal(syscall.SIGKILL) == nil {
			killed++
		}
		_ = cmd.Wait()
		got, err := os.ReadFile(target)
		if err != nil {
			t.Fatalf("after kill %d: the workflow is missing: %v", i, err)
		}
		if string(got) != contents[0] && string(got) != contents[1] {
			t.Fatalf("after kill %d: the file is torn (%d bytes)", i, len(got))
		}
	}
	// The next save sweeps what killed writers left behind.
	if out, err := exec.Command(bin, "--home", home, "save", "--overwrite", files[0]).CombinedOutput(); err != nil {
		t.Fatalf("save after the kills: %v %s", err, out)
	}
	stale, _ := filepath.Glob(filepath.Join(home, "workflows", ".*.tmp-*"))
	if len(stale) > 0 {
		t.Fatalf("temporary files left: %v", stale)
	}
	t.Logf("%d saves killed", killed)
}
