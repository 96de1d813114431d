package main

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
)

// The library workflows the MCP measurements start (workflows/*.yaml).
//
//go:embed workflows/*.yaml
var library embed.FS

// newHome makes a stepwise home under parent whose library holds the
// workflows above.
func newHome(parent, name string) (string, error) {
	dir := filepath.Join(parent, name)
	lib := filepath.Join(dir, "workflows")
	if err := os.MkdirAll(lib, 0o755); err != nil {
		return "", err
	}
	files, err := fs.Glob(library, "workflows/*.yaml")
	if err != nil {
		return "", err
	}
	for _, f := range files {
		text, err := library.ReadFile(f)
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(lib, path.Base(f)), text, 0o644); err != nil {
			return "", fmt.Errorf("home %s: %w", dir, err)
		}
	}
	return dir, nil
}

// startWaiting starts a run of wait through run_start and returns its id
// once it waits on its question.
func startWaiting(ctx context.Context, cs *Session) (string, error) {
	res, err := call(ctx, cs, "run_start", map[string]any{"workflow": "wait"})
	if err != nil {
		return "", err
	}
	if st := field(res, "status"); st != "waiting" {
		return "", fmt.Errorf("run_start: status %q, want waiting", st)
	}
	return field(res, "run_id"), nil
}
