package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"stepwise.dev/stepwise/code"
	"stepwise.dev/stepwise/internal/action"
	"stepwise.dev/stepwise/internal/expr"
	"stepwise.dev/stepwise/internal/service"
)

// More exit codes (see also ExitOK, ExitInvalid, ExitUsage).
const (
	ExitWaiting     = 3   // the run waits for an answer that was not given
	ExitInterrupted = 130 // Ctrl-C: the run stays resumable
)

// EnvDatabaseURL names the PostgreSQL database to use when --database is
// not given.
const EnvDatabaseURL = "STEPWISE_DATABASE_URL"

// globals are the flags every command that touches the home has.
type globals struct {
	home       string
	durability string
	// database: --database, else $STEPWISE_DATABASE_URL ("" = the home's
	// SQLite database).
	database   string
	tokenTTL   time.Duration
	workspace  string
	exprMemory int // MiB; 0: the default
	// maxRecoveries: see service.Options.MaxRecoveries.
	maxRecoveries int
}

func (g *globals) register(cmd *cobra.Command) {
	cmd.PersistentFlags().StringVar(&g.home, "home", "", "home directory (default $STEPWISE_HOME or ~/.stepwise)")
	cmd.PersistentFlags().StringVar(&g.durability, "durability", code.DurabilityFull, "database durability: full (fsync every step) or normal")
	cmd.PersistentFlags().StringVar(&g.database, "database", "", "a PostgreSQL URL (postgres://…) to keep runs, the library, catalogs and key in, shared by replicas, instead of the home (default $"+EnvDatabaseURL+")")
	cmd.PersistentFlags().DurationVar(&g.tokenTTL, "token-ttl", 24*time.Hour, "how long a pause's continuation token stays valid")
	cmd.PersistentFlags().StringVar(&g.workspace, "workspace", "", "the directory shell and file actions work in (default HOME/workspace)")
	cmd.PersistentFlags().IntVar(&g.exprMemory, "expr-memory", int(expr.DefaultMemoryLimit>>20), "the memory one expression evaluation may allocate, in MiB (EXPRESSION_BUDGET past it)")
	cmd.PersistentFlags().IntVar(&g.maxRecoveries, "max-recoveries", 3, "how often a step runs again after the process ended while it ran; the next time it fails (STEP_CRASHED)")
}

func (g *globals) open(ctx context.Context, actionOutput io.Writer) (*service.Service, error) {
	if g.durability != code.DurabilityFull && g.durability != code.DurabilityNormal {
		return nil, usageErr("--durability %q: use full or normal", g.durability)
	}
	if g.tokenTTL <= 0 {
		return nil, usageErr("--token-ttl must be positive")
	}
	// A person pressed Ctrl-C: give in-flight steps a moment, not more (an
	// interrupted step runs again on resume).
	if actionOutput == nil {
		actionOutput = io.Discard
	}
	// Local runs may run commands — shell steps, mcp steps that start a
	// server program of their own: whoever types `stepwise run` could run
	// them in the same terminal. Only a server keeps them off by default.
	return g.openWith(ctx, service.Options{ActionOutput: actionOutput, ShutdownGrace: 2 * time.Second,
		ShellPolicy: action.ShellPolicy{Enabled: true}, AllowInlineMCPCommands: true})
}

// openWith opens the service with the global flags applied to opts.
func (g *globals) openWith(ctx context.Context, opts service.Options) (*service.Service, error) {
	if g.durability != code.DurabilityFull && g.durability != code.DurabilityNormal {
		return nil, usageErr("--durability %q: use full or normal", g.durability)
	}
	if g.tokenTTL <= 0 {
		return nil, usageErr("--token-ttl must be positive")
	}
	if g.exprMemory <= 0 {
		return nil, usageErr("--expr-memory must be positive")
	}
	expr.SetMemoryLimit(int64(g.exprMemory) << 20)
	if g.maxRecoveries < 1 {
		return nil, usageErr("--max-recoveries must be at least 1")
	}
	opts.Home, opts.Durability, opts.TokenTTL, opts.Workspace = g.home, g.durability, g.tokenTTL, g.workspace
	opts.Database = g.database
	if opts.Database == "" {
		opts.Database = os.Getenv(EnvDatabaseURL)
	}
	opts.MaxRecoveries = g.maxRecoveries
	svc, err := service.Open(ctx, opts)
	if err != nil {
		msg := err.Error()
		if dbErr := (*service.DatabaseError)(nil); errors.As(err, &dbErr) {
			msg += " (check --database or $" + EnvDatabaseURL + "; unset, runs stay in the home's SQLite database)"
		}
		return nil, &exitError{code: ExitUsage, msg: msg}
	}
	return svc, nil
}

// describe turns an error into the CLI's message and exit code: engine
// errors the caller can act on exit 1 with their violations listed.
func describe(err error) *exitError {
	var ee *exitError
	if errors.As(err, &ee) {
		return ee
	}
	var e *service.Error
	if errors.As(err, &e) {
		var b strings.Builder
		b.WriteString(e.Message)
		for _, v := range e.Violations {
			b.WriteString("\n  ")
			if v.Line > 0 {
				fmt.Fprintf(&b, "%d:%d: ", v.Line, v.Column)
			} else if v.Path != "" {
				b.WriteString(v.Path + ": ")
			}
			b.WriteString(v.Message)
			if v.Hint != "" {
				b.WriteString(" (hint: " + v.Hint + ")")
			}
		}
		if next := nextStep(e); next != "" && len(e.Violations) == 0 {
			b.WriteString(" (" + next + ")")
		}
		exit := ExitInvalid
		if e.Category == code.CategoryNotFound || e.Category == service.CategorySecurity {
			exit = ExitUsage
		}
		return &exitError{code: exit, msg: b.String()}
	}
	return &exitError{code: ExitInvalid, msg: fmt.Sprint(err)}
}

// with opens the service for a command that neither runs actions nor
// waits for Ctrl-C, and closes it after fn.
func (g *globals) with(fn func(ctx context.Context, svc *service.Service) error) error {
	svc, err := g.open(context.Background(), io.Discard)
	if err != nil {
		return err
	}
	defer svc.Close(context.Background())
	return fn(context.Background(), svc)
}
