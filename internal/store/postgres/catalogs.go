package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// catalogsLock is the key of the advisory lock catalog writes hold for
// their transaction (the catalogs directory's lock file, across replicas).
const catalogsLock int64 = 0x73746570_63617461 // "stepcata"

// Catalogs keeps the documents of imported catalogs by name, for the
// replicas on one database (the service reads and writes them as package
// catalog does its files). A catalog's stamp is the time of its last
// write, which only increases.
type Catalogs struct {
	pool *pgxpool.Pool
	now  func() time.Time
}

// Catalogs returns the store's catalogs.
func (s *Store) Catalogs() *Catalogs { return &Catalogs{pool: s.pool, now: time.Now} }

// Get returns the document of catalog name; ok is false when there is none.
func (c *Catalogs) Get(ctx context.Context, name string) (doc []byte, ok bool, err error) {
	err = c.pool.QueryRow(ctx, `SELECT document FROM catalogs WHERE name = $1`, name).Scan(&doc)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("catalogs: %w", err)
	}
	return doc, true, nil
}

// Names lists the catalogs' names, sorted.
func (c *Catalogs) Names(ctx context.Context) ([]string, error) {
	rows, err := c.pool.Query(ctx, `SELECT name FROM catalogs ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("catalogs: %w", err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("catalogs: %w", err)
	}
	return names, nil
}

// Stamps returns every catalog's stamp by name.
func (c *Catalogs) Stamps(ctx context.Context) (map[string]string, error) {
	rows, err := c.pool.Query(ctx, `SELECT name, modified FROM catalogs`)
	if err != nil {
		return nil, fmt.Errorf("catalogs: %w", err)
	}
	out := map[string]string{}
	var name string
	var modified int64
	_, err = pgx.ForEachRow(rows, []any{&name, &modified}, func() error {
		out[name] = strconv.FormatInt(modified, 10)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("catalogs: %w", err)
	}
	return out, nil
}

// Stamp returns catalog name's stamp, "" when there is none.
func (c *Catalogs) Stamp(ctx context.Context, name string) (string, error) {
	var modified int64
	err := c.pool.QueryRow(ctx, `SELECT modified FROM catalogs WHERE name = $1`, name).Scan(&modified)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("catalogs: %w", err)
	}
	return strconv.FormatInt(modified, 10), nil
}

// Change replaces catalog name's document with what fn returns given the
// current one (nil when there is none): a new document, nil to delete
// it, or an error to write nothing (Change returns it). Changes are
// serialized across replicas.
func (c *Catalogs) Change(ctx context.Context, name string, fn func(old []byte) ([]byte, error)) error {
	return pgx.BeginFunc(ctx, c.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, catalogsLock); err != nil {
			return fmt.Errorf("catalogs: lock: %w", err)
		}
		var old []byte
		var modified int64
		err := tx.QueryRow(ctx, `SELECT document, modified FROM catalogs WHERE name = $1`, name).Scan(&old, &modified)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("catalogs: %w", err)
		}
		doc, err := fn(old)
		if err != nil {
			return err
		}
		if doc == nil {
			_, err = tx.Exec(ctx, `DELETE FROM catalogs WHERE name = $1`, name)
		} else {
			at := max(c.now().UnixNano(), modified+1)
			_, err = tx.Exec(ctx, `INSERT INTO catalogs (name, document, modified) VALUES ($1, $2, $3)
				ON CONFLICT (name) DO UPDATE SET document = EXCLUDED.document, modified = EXCLUDED.modified`, name, doc, at)
		}
		if err != nil {
			return fmt.Errorf("catalogs: %w", err)
		}
		return nil
	})
}

// Seed imports the documents docs returns (a home's catalogs by name)
// once per database, as Library.Seed does the workflows: docs is called
// only by the first process on a new database. It returns how many
// catalogs it imported.
func (c *Catalogs) Seed(ctx context.Context, docs func() map[string][]byte, note string) (int, error) {
	if done, err := marked(ctx, c.pool, "catalogs-seeded"); err != nil || done {
		return 0, err
	}
	n := 0
	err := pgx.BeginFunc(ctx, c.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, catalogsLock); err != nil {
			return fmt.Errorf("catalogs: lock: %w", err)
		}
		tag, err := tx.Exec(ctx, `INSERT INTO shared_marks (name, at, note) VALUES ('catalogs-seeded', $1, $2) ON CONFLICT (name) DO NOTHING`,
			c.now().UnixNano(), note)
		if err != nil {
			return fmt.Errorf("seed the catalogs: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return nil
		}
		at := c.now().UnixNano()
		for name, doc := range docs() {
			tag, err := tx.Exec(ctx, `INSERT INTO catalogs (name, document, modified) VALUES ($1, $2, $3) ON CONFLICT (name) DO NOTHING`, name, doc, at)
			if err != nil {
				return fmt.Errorf("seed the catalogs: %q: %w", name, err)
			}
			n += int(tag.RowsAffected())
		}
		return nil
	})
	return n, err
}
