package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/validmail/validmail/store"
	"github.com/validmail/validmail/store/backend"
)

func TestWorthWaiting(t *testing.T) {
	t.Parallel()
	pg := func(code string) error {
		return fmt.Errorf("postgres: pgstore: migrate: %w", &pgconn.PgError{Code: code, Message: "refused"})
	}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"connection refused", errors.New("dial tcp 127.0.0.1:5432: connect: connection refused"), true},
		{"server starting up", pg("57P03"), true},
		{"too many connections", pg("53300"), true},
		{"permission denied", pg("42501"), false},
		{"wrong password", pg("28P01"), false},
		{"no pg_hba.conf entry", pg("28000"), false},
		{"no such database", pg("3D000"), false},
		{"needs migrating", fmt.Errorf("open: %w", store.ErrNeedsMigration), false},
		{"too new", fmt.Errorf("open: %w", store.ErrTooNew), false},
		{"data lost", fmt.Errorf("open: %w", store.ErrDataLost), false},
		{"usage", fmt.Errorf("%w: -store", errUsage), false},
	} {
		if got := worthWaiting(tc.err); got != tc.want {
			t.Errorf("%s: worthWaiting(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}

// A store that answers no (a read-only user asked to migrate) ends the
// wait at the first attempt with the server's answer, rather than after
// -store-wait with "did not answer".
func TestWaitForStoreStopsOnRefusal(t *testing.T) {
	t.Parallel()
	refusal := &pgconn.PgError{Code: "42501", Message: "permission denied for schema public"}
	attempts := 0
	_, err := waitForStore(context.Background(), time.Hour, slog.New(slog.NewTextHandler(io.Discard, nil)), func() (*backend.Backend, error) {
		attempts++
		return nil, fmt.Errorf("postgres: %w", refusal)
	})
	if attempts != 1 || !errors.Is(err, refusal) {
		t.Fatalf("after %d attempts: %v, want one attempt ending with the refusal", attempts, err)
	}
}
