package postgres

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Feed carries change notices between the processes sharing a database
// (the library, catalogs), over PostgreSQL's LISTEN/NOTIFY: what one
// replica changes, the others learn within milliseconds. A notice is a
// topic and a name; a process does not hear its own.
type Feed struct {
	pool    *pgxpool.Pool
	channel string
	origin  string
}

// feedSep separates the fields of a notice's payload: origin, topic, name.
const feedSep = "\x1f"

// Feed returns the store's change feed. Its channel is the store's
// schema's (channels are database-wide; schemas are not shared).
func (s *Store) Feed(ctx context.Context) (*Feed, error) {
	return s.feedOn(ctx, "stepwise_changes_")
}

// feedOn returns a feed on the channel prefix names, for the store's
// schema, with an origin of its own.
func (s *Store) feedOn(ctx context.Context, prefix string) (*Feed, error) {
	var schema string
	if err := s.pool.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		return nil, fmt.Errorf("change feed: %w", err)
	}
	sum := sha256.Sum256([]byte(schema))
	var b [8]byte
	_, _ = rand.Read(b[:])
	return &Feed{pool: s.pool, channel: prefix + hex.EncodeToString(sum[:8]), origin: hex.EncodeToString(b[:])}, nil
}

// Publish tells the other processes that name of topic changed.
func (f *Feed) Publish(ctx context.Context, topic, name string) error {
	if _, err := f.pool.Exec(ctx, `SELECT pg_notify($1, $2)`, f.channel, f.origin+feedSep+topic+feedSep+name); err != nil {
		return fmt.Errorf("change feed: publish: %w", err)
	}
	return nil
}

// Listen calls fn with the topic and name of every notice other processes
// publish, one at a time, until stop is called. It listens on a
// connection of its own, in place when Listen returns; when that
// connection drops it reconnects (waiting up to 5s between attempts) and
// then calls fn("", ""): notices sent meanwhile were lost, so anything may
// have changed.
func (f *Feed) Listen(ctx context.Context, fn func(topic, name string)) (stop func(), err error) {
	conn, err := f.connect(ctx)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.loop(ctx, conn, fn)
	}()
	return func() { cancel(); <-done }, nil
}

func (f *Feed) connect(ctx context.Context) (*pgx.Conn, error) {
	conn, err := pgx.ConnectConfig(ctx, f.pool.Config().ConnConfig)
	if err != nil {
		return nil, fmt.Errorf("change feed: connect: %w", err)
	}
	if _, err := conn.Exec(ctx, `LISTEN `+pgx.Identifier{f.channel}.Sanitize()); err != nil {
		conn.Close(context.Background())
		return nil, fmt.Errorf("change feed: listen: %w", err)
	}
	return conn, nil
}

func (f *Feed) loop(ctx context.Context, conn *pgx.Conn, fn func(topic, name string)) {
	backoff := 100 * time.Millisecond
	for {
		n, err := conn.WaitForNotification(ctx)
		if ctx.Err() != nil {
			conn.Close(context.Background())
			return
		}
		if err == nil {
			origin, rest, _ := strings.Cut(n.Payload, feedSep)
			topic, name, _ := strings.Cut(rest, feedSep)
			if origin != f.origin {
				fn(topic, name)
			}
			continue
		}
		// The connection is gone: connect again, then say that anything
		// may have changed.
		conn.Close(context.Background())
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			if conn, err = f.connect(ctx); err == nil {
				break
			}
			backoff = min(2*backoff, 5*time.Second)
		}
		backoff = 100 * time.Millisecond
		fn("", "")
	}
}
