package sqlite

import (
	"context"
	"fmt"
	"time"

	"stepwise.dev/stepwise/internal/store"
)

// Gauges counts open pauses and runs no process drives, each up to limit
// (store.GaugeReader).
func (s *Store) Gauges(ctx context.Context, now time.Time, limit int) (store.Gauges, error) {
	var g store.Gauges
	if err := s.r.QueryRowContext(ctx, `SELECT count(*) FROM (SELECT 1 FROM pauses WHERE status = 'open' LIMIT ?) AS t`, limit).Scan(&g.OpenPauses); err != nil {
		return g, fmt.Errorf("count open pauses: %w", unavailable(err))
	}
	if err := s.r.QueryRowContext(ctx, `SELECT count(*) FROM (SELECT 1 FROM runs WHERE status IN ('pending', 'running')
		AND (lease_owner IS NULL OR lease_expires <= ?) LIMIT ?) AS t`, nanos(now), limit).Scan(&g.RunsWaitingToBeDriven); err != nil {
		return g, fmt.Errorf("count runs waiting to be driven: %w", unavailable(err))
	}
	return g, nil
}
