package mcpserver

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"stepwise.dev/stepwise/internal/service"
)

// TestExpiredTokenGetsAFreshOne: after a pause's token expired, run_get
// (over stdio, whose view of a waiting run is kept) and
// run_resume hand out a fresh token that continues the run; the expired
// token is refused with TOKEN_EXPIRED and a next step that works.
func TestExpiredTokenGetsAFreshOne(t *testing.T) {
	var offset atomic.Int64
	now := func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	e := newEnv(t, Options{}, service.Options{Now: now, TokenTTL: time.Hour})
	cs := stdioClient(t, e)

	var started RunResult
	if call(t, cs, "run_start", map[string]any{"workflow": "greet"}, &started) || started.Pause == nil {
		t.Fatalf("run_start: %+v", started)
	}
	old := started.Pause.Token
	var got RunResult
	if call(t, cs, "run_get", map[string]any{"run_id": started.RunID}, &got) || got.Pause == nil || got.Pause.Token != old {
		t.Fatalf("run_get before expiry: %+v", got) // the view is kept from here on
	}

	offset.Store(int64(2 * time.Hour))
	fresh := func(tool string) string {
		t.Helper()
		var r RunResult
		if call(t, cs, tool, map[string]any{"run_id": started.RunID}, &r) || r.Pause == nil {
			t.Fatalf("%s: %+v", tool, r)
		}
		if r.Pause.Token == old || !r.Pause.ExpiresAt.After(now().Add(30*time.Minute)) {
			t.Fatalf("%s after expiry handed out a token expiring at %s (now %s), the old one again: %v",
				tool, r.Pause.ExpiresAt, now(), r.Pause.Token == old)
		}
		return r.Pause.Token
	}
	tok := fresh("run_get")
	if again := fresh("run_get"); again != tok {
		t.Error("two reads within a token's lifetime gave different tokens")
	}
	fresh("run_resume")

	var refusal map[string]any
	if !call(t, cs, "run_continue", map[string]any{"token": old, "value": "Alice"}, &refusal) || refusal["error_code"] != "TOKEN_EXPIRED" {
		t.Fatalf("the expired token: %v", refusal)
	}
	if next, _ := refusal["suggested_action"].(string); !strings.Contains(next, "run_get") || !strings.Contains(next, started.RunID) {
		t.Errorf("suggested_action %q does not say how to get a fresh token", next)
	}
	var cont RunResult
	if call(t, cs, "run_continue", map[string]any{"token": tok, "value": "Alice"}, &cont) || cont.Pause == nil || cont.Pause.StepID != "write" {
		t.Fatalf("run_continue with the fresh token: %+v", cont)
	}
}
