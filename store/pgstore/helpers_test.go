package pgstore_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/store/pgstore"
)

// envPostgres names the variable holding the test database's URL.
const envPostgres = "VALIDMAIL_TEST_POSTGRES"

// sharedPool is the pool of every test in the package; tests keep apart by
// schema.
var sharedPool = sync.OnceValues(func() (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(os.Getenv(envPostgres))
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = 32
	return pgxpool.NewWithConfig(context.Background(), cfg)
})

// testPool returns the shared pool, skipping t when no database is
// configured and failing it when the database cannot be reached.
func testPool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	if os.Getenv(envPostgres) == "" {
		t.Skip(envPostgres + " not set: skipping PostgreSQL tests")
	}
	pool, err := sharedPool()
	if err != nil {
		t.Fatalf("%s: %v", envPostgres, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := pool.Ping(ctx); err != nil {
		t.Fatalf("%s is set but the database is unreachable: %v", envPostgres, err)
	}
	return pool
}

// testSchema returns a fresh schema name and drops that schema when t ends.
func testSchema(t testing.TB, pool *pgxpool.Pool) string {
	t.Helper()
	var b [6]byte
	rand.Read(b[:])
	schema := "vmtest_" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := pool.Exec(ctx, `DROP SCHEMA IF EXISTS "`+schema+`" CASCADE`); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	return schema
}

// newStore returns a migrated Store on a fresh schema of its own.
func newStore(t testing.TB) *pgstore.Store {
	t.Helper()
	pool := testPool(t)
	s, err := pgstore.New(context.Background(), pool, &pgstore.Config{Schema: testSchema(t, pool)})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// creditsGrant is a grant of n credits to account.
func creditsGrant(account string, n int64) credits.Change {
	return credits.Change{AccountID: account, Delta: n, Reason: credits.ReasonGrant}
}
