package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"stepwise.dev/stepwise/internal/service"
)

// defaultSessionFile is where `run --server` keeps its session, in the
// working directory.
const defaultSessionFile = ".stepwise/session.json"

// remoteSession is what the terminal client keeps of a run it drives
// through an MCP server, so that `resume --session` continues it in
// another process: the server, the run, its last pause and token, and
// the sealed state a stateless server returned (opaque to the client).
type remoteSession struct {
	Version   int    `json:"version"`
	Server    string `json:"server,omitempty"`
	ServerCmd string `json:"server_cmd,omitempty"`
	RunID     string `json:"run_id,omitempty"`
	Status    string `json:"status,omitempty"`
	// Token and Pause are the last open pause's (empty when none).
	Token string         `json:"token,omitempty"`
	Pause *service.Pause `json:"pause,omitempty"`
	// State is the last state the server returned, sent back as is.
	State     json.RawMessage `json:"state,omitempty"`
	UpdatedAt time.Time       `json:"updated_at"`
}

// saveSession writes s to path atomically (a temporary file in the same
// directory, then a rename) with mode 0600: it can hold a state and a
// token.
func saveSession(path string, s *remoteSession) error {
	s.Version = 1
	s.UpdatedAt = time.Now().UTC()
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("session file: %w", err)
	}
	f, err := os.CreateTemp(dir, ".session-*.tmp")
	if err != nil {
		return fmt.Errorf("session file: %w", err)
	}
	tmp := f.Name()
	_, werr := f.Write(append(b, '\n'))
	if werr == nil {
		werr = f.Chmod(0o600)
	}
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp, path)
	}
	if werr != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("session file: %w", werr)
	}
	return nil
}

// loadSession reads a session file; a missing or unreadable one is a
// usage error that names it.
func loadSession(path string) (*remoteSession, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, usageErr("session file %s does not exist: start a run with `stepwise run --server URL` first", path)
	}
	if err != nil {
		return nil, usageErr("session file: %v", err)
	}
	var s remoteSession
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, usageErr("session file %s: %v", path, err)
	}
	if s.Version != 1 || (s.Server == "" && s.ServerCmd == "") || s.RunID == "" {
		return nil, usageErr("session file %s: not a stepwise session (version 1 with a server and a run)", path)
	}
	return &s, nil
}
