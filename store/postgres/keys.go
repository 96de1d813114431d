package postgres

import (
	"context"
	"fmt"
	"time"
)

// ServerKey returns the key stored under name, storing candidate as it
// first when there is none: replicas starting at once on a new database
// each offer theirs, and all get the one that was written first.
func (s *Store) ServerKey(ctx context.Context, name string, candidate []byte) ([]byte, error) {
	if _, err := s.pool.Exec(ctx, `INSERT INTO server_keys (name, key, created_at) VALUES ($1, $2, $3) ON CONFLICT (name) DO NOTHING`,
		name, candidate, time.Now().UnixNano()); err != nil {
		return nil, fmt.Errorf("server key: %w", err)
	}
	var key []byte
	if err := s.pool.QueryRow(ctx, `SELECT key FROM server_keys WHERE name = $1`, name).Scan(&key); err != nil {
		return nil, fmt.Errorf("server key: %w", err)
	}
	return key, nil
}
