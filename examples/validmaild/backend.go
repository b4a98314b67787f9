package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/validmail/validmail/store/backend"
	"github.com/validmail/validmail/store/storeurl"
)

// openBackend opens the store named by storeURL (see package storeurl),
// reporting a malformed URL as a usage error.
func openBackend(ctx context.Context, storeURL string, workers int, logger *slog.Logger) (*backend.Backend, error) {
	b, err := storeurl.Open(ctx, storeURL, &storeurl.Options{Workers: workers, Logger: logger})
	if errors.Is(err, storeurl.ErrBadURL) {
		return nil, fmt.Errorf("%w: -store: %w", errUsage, err)
	}
	return b, err
}

// errNotShared reports a command that needs a store other processes can
// reach.
var errNotShared = errors.New("this needs a shared store (-store postgres://… or redis://…): a memory store ends with the process")
