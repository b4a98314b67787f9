package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/validmail/validmail/store"
	"github.com/validmail/validmail/store/backend"
	"github.com/validmail/validmail/store/pgstore"
	"github.com/validmail/validmail/store/redisstore"
	"github.com/validmail/validmail/store/storeurl"
)

// openBackend opens the store named by storeURL (see package storeurl),
// reporting a malformed URL as a usage error; init initialises a new
// Redis store (-store-init), skipMigrate refuses a store that needs
// migrating instead of migrating it (-skip-migrate).
func openBackend(ctx context.Context, storeURL string, workers int, init, skipMigrate bool, logger *slog.Logger) (*backend.Backend, error) {
	b, err := storeurl.Open(ctx, storeURL, &storeurl.Options{Workers: workers, Logger: logger, Init: init, SkipMigrate: skipMigrate})
	switch {
	case errors.Is(err, pgstore.ErrSchemaTooNew), errors.Is(err, redisstore.ErrLayoutTooNew):
		return nil, fmt.Errorf("the store %s was migrated by a newer release than this one: run that release, or restore the backup taken before upgrading to it (see \"Upgrades, rollbacks and backups\" in the operator's guide): %w", storeurl.Redact(storeURL), err)
	case errors.Is(err, pgstore.ErrSchemaOutdated), errors.Is(err, redisstore.ErrLayoutOutdated):
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
