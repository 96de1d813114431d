package stepwise

import (
	"context"
	"log/slog"
	"sync"

	"stepwise.dev/stepwise/internal/action"
	"stepwise.dev/stepwise/internal/secret"
	"stepwise.dev/stepwise/internal/service"
)

// Config configures an Engine. The zero value opens ~/.stepwise (or
// $STEPWISE_HOME) with its SQLite database, and lets workflows run no
// shell command, read no environment variable and reach no private or
// loopback address.
type Config struct {
	// Home is the home directory: its library of workflows, workspace,
	// server key and (without Database) its SQLite database. "" is
	// $STEPWISE_HOME, else ~/.stepwise.
	Home string
	// Database is a postgres:// URL whose database keeps the runs (and
	// the library and key, shared by every process on it); "" keeps them
	// in the home's SQLite file.
	Database string
	// Logger receives the engine's logs (nil: none).
	Logger *slog.Logger
	// AllowShell lets the shell action run any command in the workspace.
	AllowShell bool
	// AllowEnv lists the environment variables workflows may read (a name,
	// or a prefix followed by *; "*" for all).
	AllowEnv []string
	// AllowPrivateNetwork lets workflows connect to loopback, private and
	// link-local addresses.
	AllowPrivateNetwork bool
	// Actions are registered (as by RegisterAction) before Open resumes
	// the runs the last process left running, whose next steps may call
	// them. Actions registered later serve new runs.
	Actions []Action
}

// Engine is an open stepwise engine. It is safe for concurrent use; Close
// it when done. Runs it drives stay resumable after Close: the next Open
// of the same home or database resumes them.
type Engine struct {
	svc *service.Service
	// regMu makes RegisterAction's check and registration one step.
	regMu sync.Mutex
}

// Open opens the engine cfg describes, registers cfg.Actions and resumes
// the runs that were running when the last process on it stopped. An
// action refused (see RegisterAction) fails Open.
func Open(ctx context.Context, cfg Config) (*Engine, error) {
	opts := service.Options{Home: cfg.Home, Database: cfg.Database, Logger: cfg.Logger,
		ShellPolicy:   action.ShellPolicy{Enabled: cfg.AllowShell},
		EnvPolicy:     secret.EnvPolicy{Restricted: true, Allow: cfg.AllowEnv},
		NetworkPolicy: action.NetworkPolicy{Restricted: !cfg.AllowPrivateNetwork}}
	svc, err := service.Open(ctx, opts)
	if err != nil {
		return nil, errorOf(err)
	}
	e := &Engine{svc: svc}
	for _, a := range cfg.Actions {
		if err := e.RegisterAction(a); err != nil {
			_ = svc.Close(ctx)
			return nil, err
		}
	}
	if _, err := svc.Recover(ctx); err != nil {
		_ = svc.Close(ctx)
		return nil, errorOf(err)
	}
	return e, nil
}

// Close stops driving runs (a step in flight gets a few seconds to end)
// and closes the database. Stop serving tools mounted from the engine
// (MountTools) first: they fail once it is closed.
func (e *Engine) Close(ctx context.Context) error { return e.svc.Close(ctx) }

// SaveWorkflow validates a workflow definition (YAML or JSON) and saves
// it in the library under its name, replacing a workflow of that name. It
// returns the name. An invalid definition is refused (code.WorkflowInvalid,
// with violations) and nothing is saved.
func (e *Engine) SaveWorkflow(ctx context.Context, source []byte) (string, error) {
	res, err := e.svc.SaveWorkflow(ctx, service.SaveRequest{Content: string(source), Overwrite: true})
	if err != nil {
		return "", errorOf(err)
	}
	return res.Name, nil
}
