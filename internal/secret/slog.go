package secret

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
)

// NewHandler returns a slog.Handler that masks records with m before passing
// them to h: the message, every attribute key, and every string value,
// including those inside groups and those produced by slog.LogValuer.
// Values of kind Any are masked too: errors and fmt.Stringers become their
// masked text, JSON-like values go through MaskValue, []byte becomes masked
// text, and anything else is converted to its JSON form (or, failing that,
// its %+v text) and masked. Attributes given to WithAttrs are masked once,
// when WithAttrs is called; secrets added to m later are not removed from them.
func NewHandler(h slog.Handler, m *Masker) slog.Handler {
	return &handler{next: h, m: m}
}

// handler is the masking slog.Handler.
type handler struct {
	next slog.Handler
	m    *Masker
}

func (h *handler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.next.Enabled(ctx, l)
}

func (h *handler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, h.m.Mask(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

func (h *handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	masked := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		masked[i] = h.attr(a)
	}
	return &handler{next: h.next.WithAttrs(masked), m: h.m}
}

func (h *handler) WithGroup(name string) slog.Handler {
	return &handler{next: h.next.WithGroup(h.m.Mask(name)), m: h.m}
}

// attr returns a masked copy of a.
func (h *handler) attr(a slog.Attr) slog.Attr {
	return slog.Attr{Key: h.m.Mask(a.Key), Value: h.value(a.Value)}
}

// value returns a masked copy of v, resolving LogValuers first.
func (h *handler) value(v slog.Value) slog.Value {
	v = v.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.StringValue(h.m.Mask(v.String()))
	case slog.KindGroup:
		group := v.Group()
		masked := make([]slog.Attr, len(group))
		for i, a := range group {
			masked[i] = h.attr(a)
		}
		return slog.GroupValue(masked...)
	case slog.KindAny:
		return slog.AnyValue(h.any(v.Any()))
	default: // numbers, bools, times, durations carry no text
		return v
	}
}

// any masks a value of kind Any.
func (h *handler) any(x any) any {
	switch x := x.(type) {
	case nil:
		return nil
	case error:
		return h.m.Mask(x.Error())
	case fmt.Stringer:
		return h.m.Mask(x.String())
	case []byte:
		return h.m.Mask(string(x))
	case []any, []string, map[string]any, map[string]string:
		return h.m.MaskValue(x)
	}
	data, err := json.Marshal(x)
	if err != nil {
		return h.m.Mask(fmt.Sprintf("%+v", x))
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber() // keep large integers exact
	var plain any
	if err := dec.Decode(&plain); err != nil {
		return h.m.Mask(string(data))
	}
	return h.m.MaskValue(plain)
}
