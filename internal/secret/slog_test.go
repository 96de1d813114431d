package secret

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

// lazy is a LogValuer that reveals a secret only when resolved.
type lazy struct{ v string }

func (l lazy) LogValue() slog.Value { return slog.StringValue("lazy " + l.v) }

// named is a Stringer.
type named struct{ v string }

func (n named) String() string { return "named " + n.v }

// cfg is an arbitrary struct logged with slog.Any.
type cfg struct {
	User     string
	Password string
	Port     int
}

func newLogger(m *Masker) (*slog.Logger, *bytes.Buffer) {
	var buf bytes.Buffer
	return slog.New(NewHandler(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}), m)), &buf
}

func TestHandlerMasks(t *testing.T) {
	t.Parallel()
	const s = "hunter2"
	m := NewMasker()
	m.Add(s)
	log, buf := newLogger(m)

	log = log.With("run", "run-"+s).WithGroup("step").With("token", s)
	log.Info("calling with "+s,
		"plain", s,
		"n", 42,
		slog.Group("req", "auth", "Bearer "+s, slog.Group("deep", "x", s)),
		"lazy", lazy{s},
		slog.Group("g", "lazy", lazy{s}),
		"err", errors.New("denied for "+s),
		"stringer", named{s},
		"bytes", []byte("b "+s),
		"map", map[string]any{"k": s, s: "v"},
		"list", []any{s, 1},
		"struct", cfg{User: "me", Password: s, Port: 5432},
		s, "secret as key",
	)
	out := buf.String()
	if strings.Contains(out, s) {
		t.Fatalf("log output leaks the secret:\n%s", out)
	}
	var rec map[string]any
	if err := json.Unmarshal(buf.Bytes(), &rec); err != nil {
		t.Fatalf("output is not one JSON record: %v\n%s", err, out)
	}
	if rec["msg"] != "calling with ***" || rec["run"] != "run-***" {
		t.Fatalf("msg/run not masked as expected: %s", out)
	}
	step := rec["step"].(map[string]any)
	checks := map[string]any{
		"token":    "***",
		"plain":    "***",
		"n":        42.0,
		"lazy":     "lazy ***",
		"err":      "denied for ***",
		"stringer": "named ***",
		"bytes":    "b ***",
		"***":      "secret as key",
	}
	for k, want := range checks {
		if step[k] != want {
			t.Errorf("step.%s = %#v, want %#v", k, step[k], want)
		}
	}
	if got := step["req"].(map[string]any)["deep"].(map[string]any)["x"]; got != "***" {
		t.Errorf("nested group value = %#v", got)
	}
	if got := step["g"].(map[string]any)["lazy"]; got != "lazy ***" {
		t.Errorf("LogValuer in group = %#v", got)
	}
	st := step["struct"].(map[string]any)
	if st["Password"] != "***" || st["User"] != "me" || st["Port"] != 5432.0 {
		t.Errorf("struct = %#v", st)
	}
}

func TestHandlerPassesLevelAndTime(t *testing.T) {
	t.Parallel()
	m := NewMasker()
	var buf bytes.Buffer
	h := NewHandler(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn}), m)
	if h.Enabled(context.Background(), slog.LevelInfo) {
		t.Fatal("Enabled(Info) with a Warn handler")
	}
	log := slog.New(h)
	log.Info("dropped")
	log.Warn("kept")
	if out := buf.String(); strings.Contains(out, "dropped") || !strings.Contains(out, `"level":"WARN"`) || !strings.Contains(out, `"time"`) {
		t.Fatalf("output = %s", out)
	}
}
