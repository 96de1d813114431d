package service

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/gob"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"stepwise.dev/stepwise/internal/engine"
	"stepwise.dev/stepwise/internal/store"
	"stepwise.dev/stepwise/internal/store/memory"
	"stepwise.dev/stepwise/internal/workflow"
)

// Stateless mode (serve --stateless): no database. Each call imports the
// run a client holds (its sealed state) into a memory store of its own,
// lets an engine of its own drive it until it pauses, finishes or the
// call's wait ends, and seals what the engine wrote into the next state.

// MaxStateBytes bounds a sealed state, as the client carries it.
const MaxStateBytes = 1 << 20

// maxStatePlain bounds a state's decompressed JSON.
const maxStatePlain = 16 << 20

// stateFormat is the first bytes of every state: its format's name.
const stateFormat = "sws1"

// Error codes of stateless mode.
const (
	// CodeStateInvalid: a state altered, truncated, sealed with another
	// key or not a state at all.
	CodeStateInvalid = "STATE_INVALID"
	// CodeStateVersionMismatch: a state of a workflow version this server
	// cannot load (another build, an action it does not have).
	CodeStateVersionMismatch = "STATE_VERSION_MISMATCH"
	// CodeStateTooLarge: the run grew past MaxStateBytes sealed.
	CodeStateTooLarge = "STATE_TOO_LARGE"
	// CodeNotStateless: a feature that needs the server's storage, asked
	// of a stateless server.
	CodeNotStateless = "NOT_STATELESS"
)

// Stateless reports whether the service keeps no runs (Options.Stateless).
func (s *Service) Stateless() bool { return s.stateless != nil }

// storedRuns refuses (NOT_STATELESS) what reads stored runs on a
// stateless service, outside the calls that hold a client's run.
func (s *Service) storedRuns(what string) error {
	if s.stateless != nil && !s.inCall {
		return NotStateless(what)
	}
	return nil
}

// statelessMode is what a stateless service keeps: the engine's
// configuration each call's engine is built from, and the state sealer.
type statelessMode struct {
	cfg  engine.Config
	aead cipher.AEAD
}

func newStatelessMode(cfg engine.Config, key []byte) (*statelessMode, error) {
	// A key of its own, derived: a state is never a token or a secret.
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte("stepwise state seal v1"))
	block, err := aes.NewCipher(mac.Sum(nil))
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &statelessMode{cfg: cfg, aead: aead}, nil
}

// StatelessResult is a stateless call's outcome: the run as the stored
// calls show it, and its sealed state for the next call.
type StatelessResult struct {
	View  *RunView
	State string
}

// statePayload is what a state seals.
type statePayload struct {
	RunID    string          `json:"run_id"`
	Version  string          `json:"version"`
	Snapshot memory.Snapshot `json:"snapshot"`
}

// NotStateless is the error of a feature that needs the server's storage.
func NotStateless(feature string) error {
	return &engine.Error{Code: CodeNotStateless, Category: engine.CategoryValidation, Name: feature,
		Message:    feature + " needs the server's storage, and this server is stateless (serve --stateless)",
		Suggestion: "use a server that keeps runs, or a workflow without it"}
}

func stateInvalid(why string, err error) error {
	return &engine.Error{Code: CodeStateInvalid, Category: engine.CategoryValidation, Argument: "state",
		Message:    "the state is not valid: " + why,
		Suggestion: "send the state exactly as the last result gave it, to a server sharing its key", Err: err}
}

// sealState compresses and seals a payload, bound to its version.
func (m *statelessMode) sealState(p statePayload) (string, error) {
	var z bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&z, gzip.BestSpeed)
	// gob, not JSON: several times faster both ways on a run's records
	// (their raw JSON values are bytes to it, not text to check), and
	// what it decodes was authenticated first.
	if err := gob.NewEncoder(zw).Encode(p); err != nil {
		return "", err
	}
	if err := zw.Close(); err != nil {
		return "", err
	}
	head := stateHeader(p.Version)
	nonce := make([]byte, m.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", err
	}
	out := append(append(head, nonce...), m.aead.Seal(nil, nonce, z.Bytes(), head)...)
	state := base64.RawURLEncoding.EncodeToString(out)
	if len(state) > MaxStateBytes {
		return "", &engine.Error{Code: CodeStateTooLarge, Category: engine.CategoryValidation, RunID: p.RunID,
			Message:    fmt.Sprintf("the run's state would take %d bytes sealed, more than %d", len(state), MaxStateBytes),
			Suggestion: "run it on a server that keeps runs, or split the workflow into shorter ones"}
	}
	return state, nil
}

// stateHeader is a state's clear prefix, the data its sealing binds: the
// format and the workflow version.
func stateHeader(version string) []byte {
	h := []byte(stateFormat)
	h = binary.AppendUvarint(h, uint64(len(version)))
	return append(h, version...)
}

// openState opens a sealed state: STATE_INVALID unless this key sealed
// it as it is.
func (m *statelessMode) openState(state string) (statePayload, error) {
	var p statePayload
	if state == "" {
		return p, stateInvalid("it is empty", nil)
	}
	if len(state) > MaxStateBytes {
		return p, stateInvalid(fmt.Sprintf("it is longer than %d bytes", MaxStateBytes), nil)
	}
	raw, err := base64.RawURLEncoding.DecodeString(state)
	if err != nil {
		return p, stateInvalid("it is not base64url", err)
	}
	if !bytes.HasPrefix(raw, []byte(stateFormat)) {
		return p, stateInvalid("it is not a stepwise state", nil)
	}
	rest := raw[len(stateFormat):]
	n, k := binary.Uvarint(rest)
	if k <= 0 || n > uint64(len(rest)-k) {
		return p, stateInvalid("it is truncated", nil)
	}
	version := string(rest[k : k+int(n)])
	headLen := len(stateFormat) + k + int(n)
	head, body := raw[:headLen], raw[headLen:]
	ns := m.aead.NonceSize()
	if len(body) < ns+m.aead.Overhead() {
		return p, stateInvalid("it is truncated", nil)
	}
	z, err := m.aead.Open(nil, body[:ns], body[ns:], head)
	if err != nil {
		return p, stateInvalid("it was altered, truncated or sealed with another key", err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(z))
	if err != nil {
		return p, stateInvalid("its content does not decompress", err)
	}
	if err := gob.NewDecoder(io.LimitReader(zr, maxStatePlain)).Decode(&p); err != nil {
		return p, stateInvalid("its content is not a run within bounds", err)
	}
	if p.Version != version {
		return p, stateInvalid("its version does not match its content", nil)
	}
	return p, nil
}

// CheckStateless refuses (NOT_STATELESS) a workflow that needs the
// server's storage: durable sleeps and timers (sleep, retry backoff,
// repeat, a question's or the workflow's timeout) and sub-workflow runs.
// It is checked before anything runs.
func CheckStateless(wf *workflow.Workflow) error {
	refuse := func(what, where string) error {
		e := NotStateless(what).(*engine.Error)
		e.StepID, e.Workflow = where, wf.Name
		e.Message = fmt.Sprintf("%s (%s) needs the server's storage, and this server is stateless (serve --stateless)", what, where)
		return e
	}
	if wf.Timeout != "" {
		return refuse("a workflow timeout", "the workflow")
	}
	if wf.Concurrency != nil {
		return refuse("a concurrency limit (its queue is shared by the runs a server keeps)", "the workflow")
	}
	var walk func(steps []*workflow.Step) error
	walk = func(steps []*workflow.Step) error {
		for _, st := range steps {
			switch {
			case st.Workflow != "":
				return refuse("a sub-workflow step", st.ID)
			case st.Sleep != nil:
				return refuse("a sleep", st.ID)
			case st.Retry != nil:
				return refuse("a retry (its backoff is a durable timer)", st.ID)
			case st.Repeat != nil:
				return refuse("a repeat", st.ID)
			case st.Timeout != "" && (st.Ask != nil || st.Agent != nil):
				return refuse("a pause's timeout", st.ID)
			case st.Compensate != nil && st.Compensate.Retry != nil:
				return refuse("a compensation's retry", st.ID)
			}
			if err := walk(st.Steps); err != nil {
				return err
			}
			if err := walk(st.Parallel); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(wf.Steps); err != nil {
		return err
	}
	for _, h := range append(append([]*workflow.Hook{}, wf.OnSuccess...), wf.OnFailure...) {
		if h.Retry != nil || (h.Compensate != nil && h.Compensate.Retry != nil) {
			return refuse("a hook's retry", h.ID)
		}
	}
	return nil
}

// call is one stateless call: a service of its own on a memory store.
type call struct {
	*Service
	mem *memory.Store
}

// newCall builds a call's service: this one's library, actions and
// policies, its own memory store and engine.
func (s *Service) newCall() (*call, error) {
	mem := memory.New()
	cfg := s.stateless.cfg
	cfg.Store = mem
	eng, err := engine.New(cfg)
	if err != nil {
		return nil, err
	}
	c := &Service{Home: s.Home, Store: mem, Engine: eng, Actions: s.Actions, Library: s.Library, Workspace: s.Workspace,
		ShellPolicy: s.ShellPolicy, EnvPolicy: s.EnvPolicy, NetworkPolicy: s.NetworkPolicy, now: s.now, log: s.log,
		catalogs: s.catalogs, states: s.states, stateless: s.stateless, inCall: true}
	return &call{Service: c, mem: mem}, nil
}

// close stops the call's engine (a step still running is interrupted and
// runs again from the state) and drops its store.
func (c *call) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = c.Engine.Close(ctx)
	_ = c.mem.Close()
}

// settle waits for the run to stop running (up to wait), stops the
// engine so that nothing moves, and seals the run.
func (c *call) settle(ctx context.Context, runID, version string, wait time.Duration) (*StatelessResult, error) {
	if wait > 0 { // 0: at once, the run as it stands (Wait would not stop)
		if _, err := c.Wait(ctx, runID, wait); err != nil {
			return nil, err
		}
	}
	cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	_ = c.Engine.Close(cctx)
	cancel()
	return c.result(ctx, runID, version, "")
}

// result is the run's view and its sealed state (state, when not "", is
// sealed already: the run did not change).
func (c *call) result(ctx context.Context, runID, version, state string) (*StatelessResult, error) {
	v, err := c.GetRunBrief(ctx, runID)
	if err != nil {
		return nil, err
	}
	if v.Status == store.StatusFailed {
		if full, err := c.GetRun(ctx, runID); err == nil {
			v = full
		}
	}
	if state == "" {
		snap, err := c.mem.Export()
		if err != nil {
			return nil, err
		}
		// The state holds the one run (a rewind leaves the run it came
		// from behind: its answers travel in the new run's state).
		kept := snap.Runs[:0]
		for _, r := range snap.Runs {
			if r.Run.ID != runID {
				continue
			}
			if len(r.Timers) > 0 && !store.Finished(r.Run.Status) {
				return nil, NotStateless("a durable timer")
			}
			kept = append(kept, r)
		}
		snap.Runs = kept
		if state, err = c.stateless.sealState(statePayload{RunID: runID, Version: version, Snapshot: snap}); err != nil {
			return nil, err
		}
	}
	return &StatelessResult{View: v, State: state}, nil
}

// StartStateless starts a run of a loaded workflow in a call of its own
// and returns it with its state once it pauses, finishes or wait passes.
func (s *Service) StartStateless(ctx context.Context, l *Loaded, inputs map[string]any, wait time.Duration) (*StatelessResult, error) {
	if !s.Stateless() {
		return nil, errors.New("start stateless: the service keeps runs")
	}
	if err := CheckStateless(l.Workflow); err != nil {
		return nil, err
	}
	c, err := s.newCall()
	if err != nil {
		return nil, err
	}
	defer c.close()
	id, err := c.StartRun(ctx, l, inputs, false)
	if err != nil {
		return nil, err
	}
	return c.settle(ctx, id, l.Version, wait)
}

// openCall opens a state into a new call: STATE_INVALID, or
// STATE_VERSION_MISMATCH when this server cannot load the workflow
// version the state names as the version it computes.
func (s *Service) openCall(state string) (*call, statePayload, error) {
	if !s.Stateless() {
		return nil, statePayload{}, errors.New("stateless call: the service keeps runs")
	}
	p, err := s.stateless.openState(state)
	if err != nil {
		return nil, p, err
	}
	var def []byte
	for _, v := range p.Snapshot.Versions {
		if v.Version == p.Version {
			def = v.Definition
		}
	}
	found := false
	for _, r := range p.Snapshot.Runs {
		found = found || (r.Run.ID == p.RunID && r.Run.Version == p.Version)
	}
	if def == nil || !found {
		return nil, p, stateInvalid("it holds no run of its version", nil)
	}
	actual := ""
	l, err := s.Parse(def)
	if err == nil {
		actual = l.Version
	}
	if actual != p.Version {
		return nil, p, &engine.Error{Code: CodeStateVersionMismatch, Category: engine.CategoryConflict, Argument: "state",
			ExpectedVersion: p.Version, CurrentVersion: actual,
			Message:    fmt.Sprintf("the state's workflow version %s cannot be loaded by this server (it loads it as %q)", p.Version, actual),
			Suggestion: "continue it on a server of the same build and actions, or start the workflow again", Err: err}
	}
	c, err := s.newCall()
	if err != nil {
		return nil, p, err
	}
	if err := c.mem.Import(p.Snapshot); err != nil {
		c.close()
		return nil, p, stateInvalid("its records do not fit together", err)
	}
	return c, p, nil
}

// ContinueStateless continues the run a state holds: answers its pause
// (token and value, as Continue) or, with no token, drives a run the
// last call left running. Automated steps run within the call; a call
// retried from the same state runs them again (at least once).
func (s *Service) ContinueStateless(ctx context.Context, state, token string, value any, wait time.Duration) (*StatelessResult, error) {
	c, p, err := s.openCall(state)
	if err != nil {
		return nil, err
	}
	defer c.close()
	run, err := c.Store.GetRun(ctx, p.RunID)
	if err != nil {
		return nil, stateInvalid("it holds no run", err)
	}
	switch {
	case token != "":
		if _, err := c.ContinueFromAgent(ctx, token, value); err != nil {
			return nil, err
		}
	case run.Status == store.StatusRunning || run.Status == store.StatusPending:
		if _, err := c.Resume(ctx, p.RunID); err != nil {
			return nil, err
		}
	default:
		return nil, &engine.Error{Code: CodeArgumentsInvalid, Category: engine.CategoryValidation, Argument: "token", RunID: p.RunID,
			Message:    "token is required: the state's run is " + run.Status,
			Suggestion: "answer the state's pause with its token"}
	}
	return c.settle(ctx, p.RunID, p.Version, wait)
}

// RestoreStateless returns the run a state holds as it stands (nothing
// runs), its question offering the answer last given to it as default.
func (s *Service) RestoreStateless(ctx context.Context, state string) (*StatelessResult, error) {
	c, p, err := s.openCall(state)
	if err != nil {
		return nil, err
	}
	defer c.close()
	res, err := c.result(ctx, p.RunID, p.Version, state)
	if err != nil {
		return nil, err
	}
	if pa := res.View.Pause; pa != nil && pa.Kind == engine.KindQuestion && !pa.Previous && !pa.Secret && len(pa.Fields) == 0 {
		answers, _ := c.Store.Answers(ctx, p.RunID)
		for i := len(answers) - 1; i >= 0; i-- {
			if a := answers[i]; a.StepKey == pa.StepID {
				var v any
				if json.Unmarshal(a.Value, &v) == nil {
					pa.Default, pa.Previous = v, true
				}
				break
			}
		}
	}
	return res, nil
}

// RewindStateless is RewindRun on the run a state holds: the state
// returned holds a new run from toStep whose questions offer the earlier
// answers as defaults (the old run is not kept in it).
func (s *Service) RewindStateless(ctx context.Context, state, toStep string, wait time.Duration) (*StatelessResult, error) {
	return s.goBackStateless(ctx, state, wait, func(c *call, runID string) (string, error) {
		return c.Engine.RewindRun(ctx, runID, toStep)
	})
}

// RestartStateless is RestartRun on the run a state holds: the state
// returned holds a new run with the same inputs, the earlier answers as
// defaults.
func (s *Service) RestartStateless(ctx context.Context, state string, wait time.Duration) (*StatelessResult, error) {
	return s.goBackStateless(ctx, state, wait, func(c *call, runID string) (string, error) {
		return c.Engine.RestartRun(ctx, runID)
	})
}

func (s *Service) goBackStateless(ctx context.Context, state string, wait time.Duration, start func(c *call, runID string) (string, error)) (*StatelessResult, error) {
	c, p, err := s.openCall(state)
	if err != nil {
		return nil, err
	}
	defer c.close()
	id, err := start(c, p.RunID)
	if err != nil {
		return nil, err
	}
	return c.settle(ctx, id, p.Version, wait)
}
