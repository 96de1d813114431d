package action

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"stepwise.dev/stepwise/internal/workflow"
)

// Log writes a message to the run's log. with: {message, level?}.
type Log struct{}

// Name implements Action.
func (Log) Name() string { return "log" }

// Description implements Action.
func (Log) Description() string {
	return "Write a message to the run's log. with: {message: text, level?: debug|info|warn|error}. Output: {message}."
}

// Safety implements Action.
func (Log) Safety() string { return ReadOnly }

// Run implements Action.
func (Log) Run(ctx context.Context, c Call) (any, error) {
	msg := c.Input["message"]
	text := fmt.Sprint(msg)
	if msg == nil {
		text = ""
	}
	level := slog.LevelInfo
	if lv, ok := c.Input["level"]; ok {
		switch lv {
		case "debug":
			level = slog.LevelDebug
		case "info":
		case "warn", "warning":
			level = slog.LevelWarn
		case "error":
			level = slog.LevelError
		default:
			return nil, inputError("log", "level %v: want debug, info, warn or error", lv)
		}
	}
	if c.Logger != nil {
		c.Logger.Log(ctx, level, text)
	}
	if c.Output != nil {
		fmt.Fprintln(c.Output, text)
	}
	return map[string]any{"message": text}, nil
}

// Transform returns its `value` input: the engine has already evaluated
// every ${{ }} inside it, so this is how a workflow computes data.
type Transform struct{}

// Name implements Action.
func (Transform) Name() string { return "transform" }

// Description implements Action.
func (Transform) Description() string {
	return "Compute a value: with: {value: any JSON value with ${{ }} templates}. Output: the value with every template evaluated."
}

// Safety implements Action.
func (Transform) Safety() string { return ReadOnly }

// Pure implements Pure: the output is the input.
func (Transform) Pure() bool { return true }

// Run implements Action.
func (Transform) Run(_ context.Context, c Call) (any, error) {
	v, ok := c.Input["value"]
	if !ok {
		return nil, inputError("transform", "missing with.value")
	}
	return v, nil
}

// Noop does nothing, optionally for a while: with: {delay?: duration,
// fail?: message}. It exists for tests, benchmarks and dry runs.
type Noop struct{}

// Name implements Action.
func (Noop) Name() string { return "noop" }

// Description implements Action.
func (Noop) Description() string {
	return "Do nothing (for tests and dry runs). with: {delay?: duration, fail?: message}. Output: {}."
}

// Safety implements Action.
func (Noop) Safety() string { return ReadOnly }

// Pure implements Pure: waiting a while is no effect.
func (Noop) Pure() bool { return true }

// Run implements Action.
func (Noop) Run(ctx context.Context, c Call) (any, error) {
	if d, ok := c.Input["delay"]; ok {
		s, _ := d.(string)
		dur, err := workflow.ParseDuration(s)
		if err != nil {
			return nil, inputError("noop", "delay: %v", err)
		}
		t := time.NewTimer(dur)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-t.C:
		}
	}
	if msg, ok := c.Input["fail"]; ok {
		return nil, fmt.Errorf("%v", msg)
	}
	return map[string]any{}, nil
}
