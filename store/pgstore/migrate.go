package pgstore

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// The migrations are numbered files, applied in order and never edited once
// released: a change to the schema is a new file.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

// migration is one embedded schema change.
type migration struct {
	version int
	name    string
	sql     string
}

// migrations returns the embedded migrations in version order. The file
// names are checked by a test, so a malformed one is a build-time mistake.
func migrations() []migration {
	entries, err := fs.ReadDir(migrationFiles, "migrations")
	if err != nil {
		panic(err) // the directory is embedded
	}
	var ms []migration
	for _, e := range entries {
		name := e.Name()
		num, _, ok := strings.Cut(name, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			panic(fmt.Sprintf("pgstore: malformed migration name %q", name))
		}
		b, err := migrationFiles.ReadFile(path.Join("migrations", name))
		if err != nil {
			panic(err)
		}
		ms = append(ms, migration{version: v, name: name, sql: string(b)})
	}
	slices.SortFunc(ms, func(a, b migration) int { return a.version - b.version })
	return ms
}

// latestVersion is the schema version this code writes and reads.
func latestVersion() int {
	ms := migrations()
	return ms[len(ms)-1].version
}

// lockClass is the first key of the advisory lock that serialises the
// migrations of one schema; the second is a hash of the schema name.
const lockClass = 0x766d // "vm"

// Migrate brings the store's schema to the version this code knows, in one
// transaction under a transaction-level advisory lock, so that processes
// starting together apply each migration once. It creates the schema when
// it is missing and records applied versions in its schema_migrations
// table, and logs each migration it applies. Running it again changes
// nothing. A schema at a newer version than
// the code knows fails with [ErrSchemaTooNew] and is left untouched.
func (s *Store) Migrate(ctx context.Context) error {
	return s.migrateTo(ctx, latestVersion())
}

// migrateTo applies the migrations up to version target.
func (s *Store) migrateTo(ctx context.Context, target int) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fail(ctx, "migrate", err)
	}
	defer rollback(tx)
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, hashtext($2))`, lockClass, s.schema); err != nil {
		return fail(ctx, "migrate: lock", err)
	}
	var exists bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)`, s.schema).Scan(&exists); err != nil {
		return fail(ctx, "migrate", err)
	}
	if !exists {
		if _, err := tx.Exec(ctx, s.sql(`CREATE SCHEMA {schema}`)); err != nil {
			return fail(ctx, "migrate: create schema", err)
		}
	}
	if _, err := tx.Exec(ctx, s.sql(`CREATE TABLE IF NOT EXISTS {schema}.schema_migrations (
		version    integer PRIMARY KEY,
		name       text NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now()
	)`)); err != nil {
		return fail(ctx, "migrate: create schema_migrations", err)
	}
	current, err := schemaVersion(ctx, tx, s)
	if err != nil {
		return err
	}
	ms := migrations()
	if latest := ms[len(ms)-1].version; current > latest {
		return s.tooNew(ctx, current, latest)
	}
	var applied []migration
	for _, m := range ms {
		if m.version <= current || m.version > target {
			continue
		}
		applied = append(applied, m)
		if _, err := tx.Exec(ctx, s.sql(m.sql)); err != nil {
			return fail(ctx, "migrate: "+m.name, err)
		}
		if _, err := tx.Exec(ctx, s.sql(`INSERT INTO {schema}.schema_migrations (version, name) VALUES ($1, $2)`), m.version, m.name); err != nil {
			return fail(ctx, "migrate: record "+m.name, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fail(ctx, "migrate: commit", err)
	}
	for _, m := range applied {
		s.logger.InfoContext(ctx, "pgstore: migration applied", "schema", s.schema, "version", m.version, "name", m.name)
	}
	if len(applied) > 0 {
		s.logger.InfoContext(ctx, "pgstore: schema migrated", "schema", s.schema, "from", current, "to", applied[len(applied)-1].version)
	} else {
		s.logger.InfoContext(ctx, "pgstore: schema up to date", "schema", s.schema, "version", current)
	}
	return nil
}

// tooNew logs and returns the refusal of a schema a newer release
// migrated: at version current, beyond latest.
func (s *Store) tooNew(ctx context.Context, current, latest int) error {
	s.logger.ErrorContext(ctx, "pgstore: the schema is newer than this release: a newer release migrated it, and this one would misread it; run that release again, or restore the backup taken before the upgrade", "schema", s.schema, "schema_version", current, "known_version", latest)
	return fmt.Errorf("%w: schema %q is at version %d, code knows %d: run the release that migrated it, or restore the backup taken before upgrading to it", ErrSchemaTooNew, s.schema, current, latest)
}

// SchemaVersion returns the highest migration version applied to the
// store's schema, or 0 when it has none.
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	return schemaVersion(ctx, s.pool, s)
}

type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func schemaVersion(ctx context.Context, q querier, s *Store) (int, error) {
	var v int
	err := q.QueryRow(ctx, `SELECT CASE WHEN to_regclass($1) IS NULL THEN -1 ELSE 0 END`,
		s.ident+".schema_migrations").Scan(&v)
	if err != nil {
		return 0, fail(ctx, "schema version", err)
	}
	if v < 0 {
		return 0, nil
	}
	if err := q.QueryRow(ctx, s.sql(`SELECT coalesce(max(version), 0) FROM {schema}.schema_migrations`)).Scan(&v); err != nil {
		return 0, fail(ctx, "schema version", err)
	}
	return v, nil
}
