package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/validmail/validmail/store/backend"
	"github.com/validmail/validmail/store/storeurl"
)

// runMigrate runs "validmaild migrate": it brings the store to this
// release's schema (PostgreSQL) or key layout (Redis), logging each step,
// and exits, so that a deployment can migrate in a step of its own (a
// Kubernetes Job, a Helm hook) and start its serving replicas with
// -skip-migrate.
func runMigrate(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) error {
	fs := newFlagSet("validmaild migrate", stderr)
	storeURL := fs.String("store", "", "the shared store: postgres://…, redis://… or redis+cluster://… (required)")
	init := fs.Bool("store-init", false, "declare a new Redis store: write its marker key on an empty prefix (a new deployment's first\nmigration only); a prefix holding a previous release's data needs no flag")
	logLevel := fs.String("log-level", "info", "log `level`: debug, info, warn or error")
	wait := fs.Duration("store-wait", defaultStoreWait, "how long to wait for a store that does not answer (starting beside this process)")
	if err := parseFlags(fs, args, func(name string) string {
		switch name {
		case envName("store"), envName("store-init"), envName("log-level"), envName("store-wait"):
			return getenv(name) // shared with the service
		}
		return ""
	}); err != nil {
		return err
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return fmt.Errorf("%w: -log-level %q: want debug, info, warn or error", errUsage, *logLevel)
	}
	if *storeURL == "" || fs.NArg() > 0 {
		fs.Usage()
		return fmt.Errorf("%w: migrate needs -store", errUsage)
	}
	logger := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: level}))
	logger.Info("migrating the store", "store", storeurl.Redact(*storeURL))
	b, err := waitForStore(ctx, *wait, logger, func() (*backend.Backend, error) {
		return openBackend(ctx, *storeURL, 0, *init, false, logger)
	})
	if err != nil {
		return err
	}
	if !b.Shared {
		b.Close()
		return fmt.Errorf("%w: %w", errUsage, errNotShared)
	}
	if err := b.Close(); err != nil {
		return err
	}
	logger.Info("store migrated", "store", storeurl.Redact(*storeURL), "kind", b.Name)
	return nil
}
