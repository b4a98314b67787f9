// Package memoutbox is a small in-memory [webhook.Outbox] and
// [webhook.Endpoints], the reference the webhook package's own tests run
// against. Products use the backends in store/.
package memoutbox

import (
	"cmp"
	"context"
	"crypto/rand"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/validmail/validmail/webhook"
)

var (
	_ webhook.Outbox    = (*Store)(nil)
	_ webhook.Endpoints = (*Store)(nil)
)

// Store keeps deliveries and endpoints in memory behind one mutex.
type Store struct {
	mu         sync.Mutex
	deliveries map[string]*webhook.Delivery
	endpoints  map[string]webhook.Endpoint
}

// New returns an empty Store.
func New() *Store {
	return &Store{
		deliveries: map[string]*webhook.Delivery{},
		endpoints:  map[string]webhook.Endpoint{},
	}
}

func clone(d *webhook.Delivery) webhook.Delivery {
	c := *d
	c.Payload = slices.Clone(d.Payload)
	c.Attempts = slices.Clone(d.Attempts)
	return c
}

// Enqueue implements [webhook.Outbox].
func (s *Store) Enqueue(ctx context.Context, ev webhook.Event) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.deliveries[ev.ID]; ok {
		return webhook.ErrDuplicate
	}
	ev.Payload = slices.Clone(ev.Payload)
	s.deliveries[ev.ID] = &webhook.Delivery{Event: ev, State: webhook.StatePending, NextAttempt: ev.CreatedAt}
	return nil
}

// Lease implements [webhook.Outbox].
func (s *Store) Lease(ctx context.Context, p webhook.LeaseParams) ([]webhook.Delivery, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if p.Limit <= 0 {
		return nil, fmt.Errorf("memoutbox: lease limit %d", p.Limit)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var due []*webhook.Delivery
	for _, d := range s.deliveries {
		if d.State == webhook.StatePending && !d.NextAttempt.After(p.Now) &&
			(d.Lease.Token == "" || !p.Now.Before(d.Lease.Expires)) {
			due = append(due, d)
		}
	}
	slices.SortFunc(due, func(a, b *webhook.Delivery) int {
		return cmp.Or(a.NextAttempt.Compare(b.NextAttempt), cmp.Compare(a.ID, b.ID))
	})
	out := make([]webhook.Delivery, 0, min(len(due), p.Limit))
	for _, d := range due[:min(len(due), p.Limit)] {
		d.Lease = webhook.Lease{EventID: d.ID, Token: rand.Text(), Expires: p.Now.Add(p.Duration)}
		out = append(out, clone(d))
	}
	return out, nil
}

// held returns the delivery l still holds.
func (s *Store) held(l webhook.Lease) (*webhook.Delivery, error) {
	d, ok := s.deliveries[l.EventID]
	switch {
	case !ok:
		return nil, webhook.ErrNotFound
	case d.State != webhook.StatePending || d.Lease.Token == "" || d.Lease.Token != l.Token:
		return nil, webhook.ErrLeaseLost
	}
	return d, nil
}

func (s *Store) change(ctx context.Context, l webhook.Lease, f func(*webhook.Delivery)) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	d, err := s.held(l)
	if err != nil {
		return err
	}
	f(d)
	return nil
}

// RecordAttempt implements [webhook.Outbox].
func (s *Store) RecordAttempt(ctx context.Context, l webhook.Lease, a webhook.Attempt) error {
	return s.change(ctx, l, func(d *webhook.Delivery) { d.Attempts = append(d.Attempts, a) })
}

// Reschedule implements [webhook.Outbox].
func (s *Store) Reschedule(ctx context.Context, l webhook.Lease, next time.Time) error {
	return s.change(ctx, l, func(d *webhook.Delivery) {
		d.Lease = webhook.Lease{}
		d.NextAttempt = next
	})
}

// MarkDelivered implements [webhook.Outbox].
func (s *Store) MarkDelivered(ctx context.Context, l webhook.Lease, at time.Time) error {
	return s.change(ctx, l, func(d *webhook.Delivery) {
		d.Lease = webhook.Lease{}
		d.State = webhook.StateDelivered
		d.NextAttempt = time.Time{}
		d.FinishedAt = at
	})
}

// MarkDead implements [webhook.Outbox].
func (s *Store) MarkDead(ctx context.Context, l webhook.Lease, at time.Time, reason string) error {
	return s.change(ctx, l, func(d *webhook.Delivery) {
		d.Lease = webhook.Lease{}
		d.State = webhook.StateDead
		d.NextAttempt = time.Time{}
		d.FinishedAt = at
		d.Reason = reason
	})
}

// Deliveries implements [webhook.Outbox].
func (s *Store) Deliveries(ctx context.Context, p webhook.ListParams) ([]webhook.Delivery, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	limit := p.Limit
	if limit <= 0 {
		limit = webhook.DefaultListLimit
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []webhook.Delivery
	for _, d := range s.deliveries {
		if d.AccountID == p.AccountID {
			c := clone(d)
			c.Lease = webhook.Lease{}
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b webhook.Delivery) int {
		return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), cmp.Compare(b.ID, a.ID))
	})
	return out[:min(len(out), limit)], nil
}

// Pending implements [webhook.Outbox].
func (s *Store) Pending(ctx context.Context) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, d := range s.deliveries {
		if d.State == webhook.StatePending {
			n++
		}
	}
	return n, nil
}

// Prune implements [webhook.Outbox].
func (s *Store) Prune(ctx context.Context, before time.Time) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for id, d := range s.deliveries {
		if d.State != webhook.StatePending && d.FinishedAt.Before(before) {
			delete(s.deliveries, id)
			n++
		}
	}
	return n, nil
}

func cloneEndpoint(e webhook.Endpoint) webhook.Endpoint {
	e.PreviousSecrets = slices.Clone(e.PreviousSecrets)
	return e
}

// GetEndpoint implements [webhook.Endpoints].
func (s *Store) GetEndpoint(ctx context.Context, accountID string) (webhook.Endpoint, error) {
	if err := ctx.Err(); err != nil {
		return webhook.Endpoint{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.endpoints[accountID]
	if !ok {
		return webhook.Endpoint{}, webhook.ErrNotFound
	}
	return cloneEndpoint(e), nil
}

// PutEndpoint implements [webhook.Endpoints].
func (s *Store) PutEndpoint(ctx context.Context, p webhook.PutEndpointParams) (webhook.Endpoint, bool, error) {
	if err := ctx.Err(); err != nil {
		return webhook.Endpoint{}, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.endpoints[p.AccountID]
	if !ok {
		if _, err := webhook.ParseSecret(p.Secret); err != nil {
			return webhook.Endpoint{}, false, err
		}
		e = webhook.Endpoint{AccountID: p.AccountID, Secret: p.Secret, CreatedAt: p.Now}
	}
	e.URL = p.URL
	e.Enabled = p.Enabled
	if p.Enabled {
		e.DisabledReason = ""
	}
	e.UpdatedAt = p.Now
	s.endpoints[p.AccountID] = e
	return cloneEndpoint(e), !ok, nil
}

// DeleteEndpoint implements [webhook.Endpoints].
func (s *Store) DeleteEndpoint(ctx context.Context, accountID string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.endpoints[accountID]; !ok {
		return webhook.ErrNotFound
	}
	delete(s.endpoints, accountID)
	return nil
}

// RotateSecret implements [webhook.Endpoints].
func (s *Store) RotateSecret(ctx context.Context, p webhook.RotateSecretParams) (webhook.Endpoint, error) {
	if err := ctx.Err(); err != nil {
		return webhook.Endpoint{}, err
	}
	if _, err := webhook.ParseSecret(p.Secret); err != nil {
		return webhook.Endpoint{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.endpoints[p.AccountID]
	if !ok {
		return webhook.Endpoint{}, webhook.ErrNotFound
	}
	kept := []webhook.PreviousSecret{}
	for _, ps := range e.PreviousSecrets {
		if p.Now.Before(ps.ExpiresAt) {
			kept = append(kept, ps)
		}
	}
	e.PreviousSecrets = append(kept, webhook.PreviousSecret{Secret: e.Secret, ExpiresAt: p.PreviousExpiresAt})
	e.Secret = p.Secret
	e.UpdatedAt = p.Now
	s.endpoints[p.AccountID] = e
	return cloneEndpoint(e), nil
}

// DisableEndpoint implements [webhook.Endpoints].
func (s *Store) DisableEndpoint(ctx context.Context, p webhook.DisableEndpointParams) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.endpoints[p.AccountID]
	switch {
	case !ok:
		return webhook.ErrNotFound
	case e.URL != p.URL:
		return webhook.ErrEndpointChanged
	}
	e.Enabled = false
	e.DisabledReason = p.Reason
	e.UpdatedAt = p.Now
	s.endpoints[p.AccountID] = e
	return nil
}
