package pgstore

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/validmail/validmail/store/backend"
)

// NewBackend returns a [backend.Backend] on PostgreSQL: [New] with the same
// arguments, then [Store.Backend]. The pool stays the caller's.
func NewBackend(ctx context.Context, pool *pgxpool.Pool, cfg *Config) (*backend.Backend, error) {
	s, err := New(ctx, pool, cfg)
	if err != nil {
		return nil, err
	}
	return s.Backend(), nil
}

// Backend returns the store as a [backend.Backend]: the Store itself as
// accounts, credits and passwords, the job queue's driver (Jobs), its [Webhooks] as outbox and
// endpoints, its [Sessions], and a [RateLimiter] over the same schema, so every process
// on the database shares one limit per key. Closing it leaves the pool
// open.
func (s *Store) Backend() *backend.Backend {
	w := s.webhooks()
	return &backend.Backend{
		Name:         "postgres",
		Shared:       true,
		Accounts:     s,
		Credits:      s,
		Jobs:         &jobsDriver{s},
		Outbox:       w,
		Endpoints:    w,
		Limiter:      &RateLimiter{s: s},
		Passwords:    s,
		Sessions:     &Sessions{s: s},
		Tokens:       s,
		Usage:        s,
		Billing:      s,
		Notices:      s,
		Team:         s,
		Audit:        s,
		TwoFactor:    s,
		AccountSlots: s,
	}
}

// webhooks returns the store's outbox and endpoints.
func (s *Store) webhooks() *Webhooks { return &Webhooks{s: s} }
