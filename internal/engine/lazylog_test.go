package engine

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// TestLazyAttrsLogsLikeWith: a logger over lazyAttrs writes the same lines
// as slog's With, groups and further attributes included.
func TestLazyAttrsLogsLikeWith(t *testing.T) {
	var want, got bytes.Buffer
	opts := &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}}
	eager := slog.New(slog.NewTextHandler(&want, opts)).With("run_id", "r1", "step_id", "s")
	lazy := slog.New(&lazyAttrs{inner: slog.NewTextHandler(&got, opts), attrs: []slog.Attr{slog.String("run_id", "r1"), slog.String("step_id", "s")}})
	for _, l := range []*slog.Logger{eager, lazy} {
		l.Debug("hidden")
		l.Info("called", "n", 1)
		l.With("k", "v").WithGroup("g").Warn("grouped", "x", 2)
	}
	if got.String() != want.String() || !strings.Contains(got.String(), "run_id=r1 step_id=s") {
		t.Errorf("lazy:\n%s\nwith:\n%s", got.String(), want.String())
	}
}
