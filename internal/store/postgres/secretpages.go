package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// SecretPages keeps the one-time secret pages (mcpserver) in the
// database, so that a page one replica created opens, once, through any
// other. A page is its random id, the token of the pause it answers and
// the pause as JSON.
type SecretPages struct {
	pool *pgxpool.Pool
	now  func() time.Time
}

// SecretPages returns the store's secret pages.
func (s *Store) SecretPages() *SecretPages { return &SecretPages{pool: s.pool, now: time.Now} }

// Open records the page id for the pause of token, unless the pause has
// one already: it returns the page's id either way. Pages past their
// expiry are forgotten first.
func (p *SecretPages) Open(ctx context.Context, id, token string, pause []byte, expires time.Time) (string, error) {
	now := p.now().UnixNano()
	if _, err := p.pool.Exec(ctx, `DELETE FROM secret_pages WHERE (given_until IS NULL AND expires_at > 0 AND expires_at < $1) OR given_until < $1`, now); err != nil {
		return "", fmt.Errorf("secret pages: %w", err)
	}
	if _, err := p.pool.Exec(ctx, `INSERT INTO secret_pages (id, token, pause, expires_at) VALUES ($1, $2, $3, $4) ON CONFLICT (token) DO NOTHING`,
		id, token, pause, nanos(expires)); err != nil {
		return "", fmt.Errorf("secret pages: %w", err)
	}
	var got string
	if err := p.pool.QueryRow(ctx, `SELECT id FROM secret_pages WHERE token = $1`, token).Scan(&got); err != nil {
		return "", fmt.Errorf("secret pages: %w", err)
	}
	return got, nil
}

// Page returns the pause of an open page: ok is false when there is no
// such page, or it was used, or it expired.
func (p *SecretPages) Page(ctx context.Context, id string) (pause []byte, ok bool, err error) {
	err = p.pool.QueryRow(ctx, `SELECT pause FROM secret_pages WHERE id = $1 AND given_until IS NULL AND (expires_at = 0 OR expires_at >= $2)`,
		id, p.now().UnixNano()).Scan(&pause)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("secret pages: %w", err)
	}
	return pause, true, nil
}

// Complete ends a page whose secret was given; Given reports it until
// until.
func (p *SecretPages) Complete(ctx context.Context, id string, until time.Time) error {
	if _, err := p.pool.Exec(ctx, `UPDATE secret_pages SET given_until = $2 WHERE id = $1`, id, until.UnixNano()); err != nil {
		return fmt.Errorf("secret pages: %w", err)
	}
	return nil
}

// Close ends a page whose secret was not given: its link stops working.
func (p *SecretPages) Close(ctx context.Context, id string) error {
	if _, err := p.pool.Exec(ctx, `DELETE FROM secret_pages WHERE id = $1 AND given_until IS NULL`, id); err != nil {
		return fmt.Errorf("secret pages: %w", err)
	}
	return nil
}

// Given reports whether the page's secret was given (and the page is
// still remembered), and whether the page exists at all.
func (p *SecretPages) Given(ctx context.Context, id string) (given, exists bool, err error) {
	var until *int64
	err = p.pool.QueryRow(ctx, `SELECT given_until FROM secret_pages WHERE id = $1`, id).Scan(&until)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, false, nil
	}
	if err != nil {
		return false, false, fmt.Errorf("secret pages: %w", err)
	}
	return until != nil && *until >= p.now().UnixNano(), true, nil
}
