package memstore

import (
	"github.com/validmail/validmail/store/backend"
)

// NewBackend returns an empty in-memory [backend.Backend]: New().Backend().
func NewBackend() *backend.Backend { return New().Backend() }

// Backend returns the store as a [backend.Backend]: the Store itself as
// accounts, credits, checkouts, passwords and tokens, the job queue's driver (Jobs), its [Webhooks] as outbox and
// endpoints, and a new [Sessions]. The backend is not shared and has no rate limiter; closing it
// does nothing.
func (s *Store) Backend() *backend.Backend {
	w := &Webhooks{s: s}
	return &backend.Backend{
		Name:         "memory",
		Accounts:     s,
		Credits:      s,
		Jobs:         &jobsDriver{s},
		Outbox:       w,
		Endpoints:    w,
		Passwords:    s,
		Sessions:     NewSessions(),
		Tokens:       s,
		Usage:        s,
		Billing:      s,
		Notices:      s,
		Team:         s,
		Audit:        s,
		TwoFactor:    s,
		AccountSlots: s.slots,
	}
}
