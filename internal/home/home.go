package home

import (
	"fmt"
	"os"
	"path/filepath"
)

// EnvHome names the environment variable that sets the home directory.
const EnvHome = "STEPWISE_HOME"

// Home is an opened home directory.
type Home struct {
	// Dir is the absolute path of the home directory.
	Dir string
}

// Resolve returns the home directory to use: flag when it is not empty,
// else $STEPWISE_HOME when it is not empty, else ~/.stepwise. The result is
// absolute and cleaned; the directory need not exist.
func Resolve(flag string) (string, error) {
	dir := flag
	if dir == "" {
		dir = os.Getenv(EnvHome)
	}
	if dir == "" {
		user, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("home: no --home, no %s, and no user home directory: %w", EnvHome, err)
		}
		dir = filepath.Join(user, ".stepwise")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("home: %s: %w", dir, err)
	}
	return abs, nil
}

// Open returns the home at dir, creating it (mode 0700) and its workflows
// directory if they are missing. Existing directories keep their mode.
func Open(dir string) (*Home, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("home: %s: %w", dir, err)
	}
	h := &Home{Dir: abs}
	if err := os.MkdirAll(h.WorkflowsDir(), 0o700); err != nil {
		return nil, fmt.Errorf("home: create %s: %w", h.WorkflowsDir(), err)
	}
	return h, nil
}

// DBPath returns the path of the SQLite database.
func (h *Home) DBPath() string { return filepath.Join(h.Dir, "stepwise.db") }

// WorkflowsDir returns the path of the workflow library.
func (h *Home) WorkflowsDir() string { return filepath.Join(h.Dir, "workflows") }

// WorkspaceDir returns the default workspace: the directory the shell and
// file actions may touch.
func (h *Home) WorkspaceDir() string { return filepath.Join(h.Dir, "workspace") }

// KeyPath returns the path of the server key file.
func (h *Home) KeyPath() string { return filepath.Join(h.Dir, "key") }
