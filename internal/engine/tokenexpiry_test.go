package engine

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"stepwise.dev/stepwise/internal/store/sqlite"
	"stepwise.dev/stepwise/internal/token"
)

// TestExpiredTokenIsNoDeadEnd: a pause outlives its tokens. Reading an
// open pause whose first token expired (or nears expiry) gives a new token
// that works; the expired one is refused with TOKEN_EXPIRED and a next
// step naming the run; reads within one token lifetime give one token.
func TestExpiredTokenIsNoDeadEnd(t *testing.T) {
	h := newHarness(t)
	h.close()
	s, err := sqlite.Open(context.Background(), h.path, sqlite.Options{Durability: sqlite.Normal})
	if err != nil {
		t.Fatal(err)
	}
	var offset atomic.Int64
	now := func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	eng, err := New(Config{Store: s, Key: testKey, TokenTTL: time.Hour, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	h.store, h.eng = s, eng
	t.Cleanup(h.close)

	id, err := h.start(questionFlow, nil)
	if err != nil {
		t.Fatal(err)
	}
	h.wait(id)
	first := h.pause(id)
	if again := h.pause(id); again.Token != first.Token {
		t.Fatal("two reads within a token's lifetime gave different tokens")
	}
	verify := func(p Pause) {
		t.Helper()
		c, err := token.NewSigner(testKey).Verify(p.Token, now())
		if err != nil {
			t.Fatalf("the token read with the pause does not verify: %v", err)
		}
		if !c.Expires.Equal(p.ExpiresAt) {
			t.Errorf("the pause says its token expires at %s, the token says %s", p.ExpiresAt, c.Expires)
		}
		if left := c.Expires.Sub(now()); left < 30*time.Minute {
			t.Errorf("a token handed out with %s left, want at least half the lifetime", left)
		}
	}
	verify(first)

	offset.Store(int64(40 * time.Minute)) // less than half a lifetime left
	near := h.pause(id)
	verify(near)
	if near.Token == first.Token {
		t.Fatal("a token near its expiry was handed out again")
	}

	offset.Store(int64(5 * time.Hour)) // both expired
	fresh := h.pause(id)
	verify(fresh)
	for _, old := range []string{first.Token, near.Token} {
		_, err := eng.Continue(context.Background(), old, "Al")
		var ee *Error
		if !errors.As(err, &ee) || ee.Code != CodeTokenExpired {
			t.Fatalf("an expired token: %v", err)
		}
		if !strings.Contains(ee.Suggestion, "read the run") || !strings.Contains(ee.Suggestion, id) {
			t.Errorf("the next step does not say how to get a fresh token for run %s: %q", id, ee.Suggestion)
		}
	}
	if _, err := eng.Continue(context.Background(), fresh.Token, "Al"); err != nil {
		t.Fatalf("continuing with the fresh token: %v", err)
	}
	if r := h.wait(id); r.Status != "succeeded" {
		t.Fatalf("status %s", r.Status)
	}
}
