package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// ServerKey returns the key stored under name, storing candidate as it
// first when there is none: replicas starting at once on a new database
// each offer theirs, and all get the one that was written first.
func (s *Store) ServerKey(ctx context.Context, name string, candidate []byte) ([]byte, error) {
	var key []byte
	err := s.pool.QueryRow(ctx, `SELECT key FROM server_keys WHERE name = $1`, name).Scan(&key)
	if err == nil {
		return key, nil // every start but the first
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("server key: %w", err)
	}
	if _, err := s.pool.Exec(ctx, `INSERT INTO server_keys (name, key, created_at) VALUES ($1, $2, $3) ON CONFLICT (name) DO NOTHING`,
		name, candidate, time.Now().UnixNano()); err != nil {
		return nil, fmt.Errorf("server key: %w", err)
	}
	if err := s.pool.QueryRow(ctx, `SELECT key FROM server_keys WHERE name = $1`, name).Scan(&key); err != nil {
		return nil, fmt.Errorf("server key: %w", err)
	}
	return key, nil
}

// marked reports whether the mark name was set (shared_marks): a read, so
// that what is done once per database costs no write afterwards.
func marked(ctx context.Context, q querier, name string) (bool, error) {
	var ok bool
	if err := q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM shared_marks WHERE name = $1)`, name).Scan(&ok); err != nil {
		return false, err
	}
	return ok, nil
}
