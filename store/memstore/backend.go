package memstore

import "github.com/validmail/validmail/store"

// NewBackend returns an empty in-memory [store.Backend]: New().Backend().
func NewBackend() *store.Backend { return New().Backend() }

// Backend returns the store as a [store.Backend]: the Store itself as
// accounts, credits, passwords, tokens and job queue, its [Webhooks] as outbox and
// endpoints, and a new [Sessions]. The backend is not shared and has no rate limiter; closing it
// does nothing.
func (s *Store) Backend() *store.Backend {
	w := &Webhooks{s: s}
	return &store.Backend{
		Name:      "memory",
		Accounts:  s,
		Credits:   s,
		Jobs:      s,
		Outbox:    w,
		Endpoints: w,
		Passwords: s,
		Sessions:  NewSessions(),
		Tokens:    s,
		Usage:     s,
	}
}
