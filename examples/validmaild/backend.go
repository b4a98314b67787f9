package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/validmail/validmail/store"
	"github.com/validmail/validmail/store/backend"
	"github.com/validmail/validmail/store/storeurl"
)

// openBackend opens the store named by storeURL (see package storeurl),
// reporting a malformed URL as a usage error; init initialises a new
// Redis store (-store-init), skipMigrate refuses a store that needs
// migrating instead of migrating it (-skip-migrate).
func openBackend(ctx context.Context, storeURL string, workers int, init, skipMigrate bool, logger *slog.Logger) (*backend.Backend, error) {
	b, err := storeurl.Open(ctx, storeURL, &storeurl.Options{Workers: workers, Logger: logger, Init: init, SkipMigrate: skipMigrate})
	switch {
	case errors.Is(err, store.ErrTooNew):
		return nil, fmt.Errorf("the store %s was migrated by a newer release than this one: run that release, or restore the backup taken before upgrading to it (see \"Upgrades, rollbacks and backups\" in the operator's guide): %w", storeurl.Redact(storeURL), err)
	case errors.Is(err, store.ErrNeedsMigration):
		return nil, fmt.Errorf("the store %s needs migrating and -skip-migrate is set: run validmaild migrate -store URL first: %w", storeurl.Redact(storeURL), err)
	case errors.Is(err, storeurl.ErrBadURL):
		return nil, fmt.Errorf("%w: -store: %w", errUsage, err)
	case errors.Is(err, store.ErrDataLost):
		return nil, fmt.Errorf("the store %s has no marker key. If this is a new deployment, start validmaild once with -store-init (VALIDMAIL_STORE_INIT=true), then without it. Otherwise the Redis server lost its data: restore it from its backup or replica before starting: %w", storeurl.Redact(storeURL), err)
	}
	return b, err
}

// errNotShared reports a command that needs a store other processes can
// reach.
var errNotShared = errors.New("this needs a shared store (-store postgres://… or redis://…): a memory store ends with the process")

// waitForStore calls open until it succeeds, fails for a reason waiting
// cannot mend (a usage error, a store that lost its data, needs
// migrating or was migrated by a newer release), ctx ends or wait has
// passed since the first attempt, pausing between attempts from 250 ms,
// doubling up to 5 s, and logging each failure: a store starting beside
// the service (compose, a pod restarted with its database) is waited
// for instead of ending the process. wait 0 tries once.
func waitForStore(ctx context.Context, wait time.Duration, logger *slog.Logger, open func() (*backend.Backend, error)) (*backend.Backend, error) {
	deadline := time.Now().Add(wait)
	pause := 250 * time.Millisecond
	for attempt := 1; ; attempt++ {
		b, err := open()
		if err == nil || !worthWaiting(err) || ctx.Err() != nil {
			return b, err
		}
		left := time.Until(deadline)
		if left <= 0 {
			if wait > 0 {
				return nil, fmt.Errorf("the store did not answer within -store-wait %v: %w", wait, err)
			}
			return nil, err
		}
		pause = min(pause, left)
		logger.Warn("the store does not answer yet; trying again", "attempt", attempt, "retry_in", pause.String(), "err", err)
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(pause):
		}
		pause = min(2*pause, 5*time.Second)
	}
}

// worthWaiting reports whether a store that failed to open with err may
// open later by itself: it did not answer, rather than answered no.
func worthWaiting(err error) bool {
	for _, final := range []error{errUsage, store.ErrDataLost, store.ErrTooNew, store.ErrNeedsMigration} {
		if errors.Is(err, final) {
			return false
		}
	}
	return !refusedBySQLServer(err)
}

// refusedBySQLServer reports whether err is PostgreSQL's answer that the
// connection's user or database will not do: a password or pg_hba.conf
// refusal (SQLSTATE class 28), a database that does not exist (3D), or a
// permission denied (42, as for a read-only user asked to migrate).
// Waiting does not mend these, and the server did answer.
func refusedBySQLServer(err error) bool {
	var coded interface{ SQLState() string }
	if !errors.As(err, &coded) {
		return false
	}
	state := coded.SQLState()
	if len(state) != 5 {
		return false
	}
	switch state[:2] {
	case "28", "3D", "42":
		return true
	}
	return false
}
