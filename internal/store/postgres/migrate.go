package postgres

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

//go:embed migrations/*.sql
var migrations embed.FS

// migrationLock is the key of the advisory lock that migrations hold: two
// processes opening a new database at once apply each migration once, the
// second waiting for the first and then finding nothing left to do.
const migrationLock int64 = 0x73746570_77697365 // "stepwise"

// migrate applies the embedded migrations that the database has not seen,
// recording them in schema_migrations, all in one transaction under the
// advisory lock (DDL is transactional in PostgreSQL: a failed migration
// leaves the schema as it was).
func migrate(ctx context.Context, pool *pgxpool.Pool) error {
	files, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return err
	}
	sort.Strings(files)
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, migrationLock); err != nil {
			return fmt.Errorf("lock for migrations: %w", err)
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL)`); err != nil {
			return fmt.Errorf("create schema_migrations: %w", err)
		}
		seen := map[int]bool{}
		rows, err := tx.Query(ctx, `SELECT version FROM schema_migrations`)
		if err != nil {
			return fmt.Errorf("read schema_migrations: %w", err)
		}
		versions, err := pgx.CollectRows(rows, pgx.RowTo[int32])
		if err != nil {
			return fmt.Errorf("read schema_migrations: %w", err)
		}
		for _, v := range versions {
			seen[int(v)] = true
		}
		for _, f := range files {
			base := strings.TrimPrefix(f, "migrations/")
			n, err := strconv.Atoi(strings.SplitN(base, "_", 2)[0])
			if err != nil {
				return fmt.Errorf("migration %s: name must start with a number", base)
			}
			if seen[n] {
				continue
			}
			body, err := migrations.ReadFile(f)
			if err != nil {
				return err
			}
			// No arguments: the simple protocol, which runs the file's
			// several statements.
			if _, err := tx.Exec(ctx, string(body)); err != nil {
				return fmt.Errorf("apply migration %s: %w", base, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, n, base); err != nil {
				return fmt.Errorf("record migration %s: %w", base, err)
			}
		}
		return nil
	})
}
