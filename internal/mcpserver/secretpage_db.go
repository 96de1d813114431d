package mcpserver

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"time"

	"stepwise.dev/stepwise/internal/service"
)

// The secret pages in a store the replicas share (secretPages.db): a page
// one replica created opens through any, once.

// dbTimeout bounds one call to the shared store.
const dbTimeout = 10 * time.Second

// dbOpen records the page of a pause in the shared store and returns its
// id (the one recorded before, if the pause has a page).
func (sp *secretPages) dbOpen(p *service.Pause) (string, error) {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	data, err := json.Marshal(p)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), dbTimeout)
	defer cancel()
	return sp.db.Open(ctx, base64.RawURLEncoding.EncodeToString(b), p.Token, data, p.ExpiresAt)
}

// dbGet returns an open page of the shared store, nil when there is none.
func (sp *secretPages) dbGet(id string) *secretPage {
	ctx, cancel := context.WithTimeout(context.Background(), dbTimeout)
	defer cancel()
	data, ok, err := sp.db.Page(ctx, id)
	if err != nil {
		sp.log.Error("secret page", "error", err)
		return nil
	}
	if !ok {
		return nil
	}
	var p service.Pause
	if err := json.Unmarshal(data, &p); err != nil {
		sp.log.Error("secret page", "error", err)
		return nil
	}
	return &secretPage{id: id, pause: p, done: make(chan struct{})}
}

// dbEnd ends a page of the shared store: given (remembered until its
// pause would have expired, or an hour), or closed.
func (sp *secretPages) dbEnd(id string, given bool) {
	ctx, cancel := context.WithTimeout(context.Background(), dbTimeout)
	defer cancel()
	var err error
	if given {
		until := time.Now().Add(time.Hour)
		if pg := sp.dbGet(id); pg != nil && !pg.pause.ExpiresAt.IsZero() {
			until = pg.pause.ExpiresAt
		}
		err = sp.db.Complete(ctx, id, until)
	} else {
		err = sp.db.Close(ctx, id)
	}
	if err != nil {
		sp.log.Error("secret page", "error", err)
	}
}

// dbWaitPoll is how often a wait looks at the shared store.
const dbWaitPoll = 200 * time.Millisecond

// dbWait is wait for a page of the shared store, which the replica that
// took the secret may not be this one: it looks every dbWaitPoll.
func (sp *secretPages) dbWait(ctx context.Context, id string, d time.Duration) bool {
	deadline := time.Now().Add(d)
	tick := time.NewTicker(dbWaitPoll)
	defer tick.Stop()
	for {
		given, exists, err := sp.db.Given(ctx, id)
		if err == nil {
			if given {
				return true
			}
			if !exists {
				return false
			}
		}
		if time.Now().After(deadline) {
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
		}
	}
}
