package redisstore

import (
	"github.com/redis/go-redis/v9"

	"github.com/validmail/validmail/store/backend"
)

// NewBackend returns a [backend.Backend] on Redis: [New] with the same
// arguments, then [Store.Backend]. The client stays the caller's.
func NewBackend(client redis.UniversalClient, cfg *Config) (*backend.Backend, error) {
	s, err := New(client, cfg)
	if err != nil {
		return nil, err
	}
	return s.Backend(), nil
}

// Backend returns the store as a [backend.Backend]: the Store itself as
// accounts and credits, the job queue's driver (Jobs), its [Webhooks] as outbox and
// endpoints, and a [RateLimiter] whose buckets sit among the store's
// shards (an account's, named with the account's id as their group, in the
// account's shard), so every process on the server shares one limit per
// key. Closing it leaves the client open.
func (s *Store) Backend() *backend.Backend {
	w := s.webhooks()
	return &backend.Backend{
		Name:         "redis",
		Shared:       true,
		Accounts:     s,
		Credits:      s,
		Jobs:         &jobsDriver{s},
		Outbox:       w,
		Endpoints:    w,
		Limiter:      s.rateLimiter(),
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
		Health:       s,
	}
}

// webhooks returns the store's outbox and endpoints.
func (s *Store) webhooks() *Webhooks { return &Webhooks{s: s} }
