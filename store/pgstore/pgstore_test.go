package pgstore_test

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/validmail/validmail/jobs/jobtype"
	"github.com/validmail/validmail/store"
	"github.com/validmail/validmail/store/pgstore"
)

func TestMigrateIdempotentAndConcurrent(t *testing.T) {
	t.Parallel()
	pool := testPool(t)
	schema := testSchema(t, pool)
	ctx := context.Background()
	cfg := &pgstore.Config{Schema: schema}

	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		wg.Go(func() { _, errs[i] = pgstore.New(ctx, pool, cfg) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("concurrent migrations: %v", err)
	}
	s, err := pgstore.New(ctx, pool, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("second Migrate: %v", err)
	}
	v, err := s.SchemaVersion(ctx)
	if err != nil || v < 1 {
		t.Fatalf("SchemaVersion: %d, %v", v, err)
	}
	var rows, distinct int
	err = pool.QueryRow(ctx, `SELECT count(*), count(DISTINCT version) FROM "`+schema+`".schema_migrations`).Scan(&rows, &distinct)
	// One row per migration, once each; the numbers may skip (each area
	// of the schema is given its own).
	var last int
	if err == nil {
		err = pool.QueryRow(ctx, `SELECT max(version) FROM "`+schema+`".schema_migrations`).Scan(&last)
	}
	if err != nil || rows != distinct || rows < 1 || last != v {
		t.Fatalf("schema_migrations holds %d rows (%d versions, the last %d), want each once up to %d: %v", rows, distinct, last, v, err)
	}
	if _, err := pgstore.New(ctx, pool, &pgstore.Config{Schema: schema, SkipMigrate: true}); err != nil {
		t.Fatalf("SkipMigrate on a current schema: %v", err)
	}
}

func TestMigrateRefusesNewerSchema(t *testing.T) {
	t.Parallel()
	pool := testPool(t)
	schema := testSchema(t, pool)
	ctx := context.Background()
	s, err := pgstore.New(ctx, pool, &pgstore.Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	v, _ := s.SchemaVersion(ctx)
	if _, err := pool.Exec(ctx, `INSERT INTO "`+schema+`".schema_migrations (version, name) VALUES ($1, 'from the future')`, v+1); err != nil {
		t.Fatal(err)
	}
	if err := s.Migrate(ctx); !errors.Is(err, pgstore.ErrSchemaTooNew) || !errors.Is(err, store.ErrTooNew) {
		t.Fatalf("Migrate on a newer schema: %v, want ErrSchemaTooNew and store.ErrTooNew", err)
	}
	for _, skip := range []bool{false, true} {
		if _, err := pgstore.New(ctx, pool, &pgstore.Config{Schema: schema, SkipMigrate: skip}); !errors.Is(err, pgstore.ErrSchemaTooNew) {
			t.Fatalf("New (SkipMigrate %v) on a newer schema: %v, want ErrSchemaTooNew", skip, err)
		}
	}
	fresh := testSchema(t, pool)
	if _, err := pgstore.New(ctx, pool, &pgstore.Config{Schema: fresh, SkipMigrate: true}); !errors.Is(err, pgstore.ErrSchemaOutdated) || !errors.Is(err, store.ErrNeedsMigration) {
		t.Fatalf("New with SkipMigrate on an empty schema: %v, want ErrSchemaOutdated and store.ErrNeedsMigration", err)
	}
}

// TestSecretNeverStored searches every row of every table, rendered by
// row_to_json, for the secret and its random part.
func TestSecretNeverStored(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	a, err := s.CreateAccount(ctx, store.CreateAccountParams{Email: "owner@example.org"})
	if err != nil {
		t.Fatal(err)
	}
	k, secret, err := s.CreateKey(ctx, store.CreateKeyParams{AccountID: a.ID, Name: "ci"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Authenticate(ctx, secret); err != nil {
		t.Fatal(err)
	}
	dump, err := s.Dump(ctx)
	if err != nil {
		t.Fatal(err)
	}
	body := strings.TrimPrefix(secret, store.SecretPrefix)
	if strings.Contains(string(dump), secret) || strings.Contains(string(dump), body[len(body)-16:]) {
		t.Fatal("the secret appears in the database")
	}
	if !strings.Contains(string(dump), k.Hash) || !strings.Contains(string(dump), "owner@example.org") {
		t.Fatalf("the dump misses the key's hash or the account: %s", dump)
	}
}

// TestNotifyLatency measures how soon after an enqueue starts a subscriber
// is woken.
func TestNotifyLatency(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := t.Context()
	ch, err := s.Subscribe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const rounds = 20
	lat := make([]time.Duration, 0, rounds)
	for i := range rounds {
		drain(ch)
		start := time.Now()
		if _, err := s.Enqueue(ctx, jobtype.EnqueueParams{AccountID: "a", Emails: []string{fmt.Sprint(i, "@example.org")}}); err != nil {
			t.Fatal(err)
		}
		select {
		case <-ch:
			lat = append(lat, time.Since(start))
		case <-time.After(30 * time.Second):
			t.Fatalf("round %d: no wake-up within 30 s", i)
		}
	}
	// A subscription has no timer: every wake-up came from a NOTIFY. The
	// latency is logged, not asserted (a loaded machine stretches it).
	slices.Sort(lat)
	p50, p90, worst := lat[rounds/2], lat[rounds*9/10], lat[rounds-1]
	t.Logf("wake-up latency over %d enqueues: median %v, p90 %v, max %v", rounds, p50, p90, worst)
}

func drain(ch <-chan struct{}) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}

// TestNotifyReconnects kills the LISTEN connection's backend and checks that
// subscribers are woken again by later enqueues.
func TestNotifyReconnects(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := t.Context()
	ch, err := s.Subscribe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sum := md5.Sum([]byte(s.Schema()))
	channel := "validmail_jobs_" + hex.EncodeToString(sum[:])
	pool := testPool(t)
	var killed int
	err = pool.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE query LIKE 'LISTEN %' || $1 || '%' AND pid <> pg_backend_pid()`, channel).Scan(&killed)
	if err != nil || killed != 1 {
		t.Fatalf("terminated %d listeners, want 1: %v", killed, err)
	}
	// The listener signals once when it is back, as notifications may
	// have been missed.
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		t.Fatal("no signal after the listener reconnected")
	}
	drain(ch)
	if _, err := s.Enqueue(ctx, jobtype.EnqueueParams{AccountID: "a", Emails: []string{"x@example.org"}}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ch:
	case <-time.After(time.Second):
		t.Fatal("no wake-up after the reconnection")
	}
}

// TestDatabaseGoesAway terminates the store's connections mid-use: the next
// operation fails with ErrUnavailable, and nothing acknowledged is lost.
func TestDatabaseGoesAway(t *testing.T) {
	t.Parallel()
	base := testPool(t)
	schema := testSchema(t, base)
	ctx := context.Background()
	app := "vm_" + schema
	cfg := base.Config().Copy()
	cfg.ConnConfig.RuntimeParams["application_name"] = app
	cfg.MaxConns = 4
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	s, err := pgstore.New(ctx, pool, &pgstore.Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	a, err := s.CreateAccount(ctx, store.CreateAccountParams{Email: "gone@example.org"})
	if err != nil {
		t.Fatal(err)
	}
	ids, err := s.EnqueueCharged(ctx, jobtype.EnqueueChargedParams{AccountID: a.ID, Emails: []string{"a@example.org", "b@example.org"}})
	if err != nil {
		t.Fatal(err)
	}

	// Hold every connection so that the next call uses a terminated one.
	var conns []*pgxpool.Conn
	for range cfg.MaxConns {
		c, err := pool.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	var n int
	if err := base.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1`, app).Scan(&n); err != nil || n == 0 {
		t.Fatalf("terminated %d backends: %v", n, err)
	}
	time.Sleep(50 * time.Millisecond)
	for _, c := range conns {
		c.Release()
	}
	_, err = s.Balance(ctx, a.ID)
	if !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("Balance on a terminated connection: %v, want ErrUnavailable", err)
	}

	// The pool reconnects; what was acknowledged is there.
	var bal int64
	deadline := time.Now().Add(5 * time.Second)
	for bal, err = s.Balance(ctx, a.ID); err != nil && time.Now().Before(deadline); bal, err = s.Balance(ctx, a.ID) {
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil || bal != store.DefaultSignupCredits-2 {
		t.Fatalf("balance after reconnecting: %d, %v; want %d", bal, err, store.DefaultSignupCredits-2)
	}
	for _, id := range ids {
		if _, err := s.Get(ctx, a.ID, id); err != nil {
			t.Fatalf("job %s after reconnecting: %v", id, err)
		}
	}
}

func TestUnreachableDatabase(t *testing.T) {
	t.Parallel()
	testPool(t) // skip without a database configured
	pool, err := pgxpool.New(context.Background(), "postgres://postgres@127.0.0.1:1/test?sslmode=disable&connect_timeout=2")
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	_, err = pgstore.New(context.Background(), pool, nil)
	if !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("New on an unreachable database: %v, want ErrUnavailable", err)
	}
}

func TestCanceledContext(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Enqueue(ctx, jobtype.EnqueueParams{AccountID: "a", Emails: []string{"x@example.org"}}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Enqueue with a canceled context: %v", err)
	}
	if _, err := s.Subscribe(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Subscribe with a canceled context: %v", err)
	}
}
