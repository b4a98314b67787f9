package memstore

import (
	"cmp"
	"context"
	"crypto/rand"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/validmail/validmail/webhook"
)

var (
	_ webhook.Outbox    = (*Webhooks)(nil)
	_ webhook.Endpoints = (*Webhooks)(nil)
)

// Webhooks is the webhook side of a [Store]: its outbox
// ([webhook.Outbox]) and endpoints ([webhook.Endpoints]). It shares the
// Store's data and mutex, so the event a job completion records
// ([jobsdriver.CompleteParams.Event]) is a pending delivery from the instant the
// job is completed.
//
// It is a separate type because the job queue's methods on Store already
// carry the names Enqueue and Lease; [Store.Backend] hands out both.
type Webhooks struct{ s *Store }

func cloneDelivery(d *webhook.Delivery) webhook.Delivery {
	c := *d
	c.Payload = slices.Clone(d.Payload)
	c.Attempts = slices.Clone(d.Attempts)
	c.Batch = cloneBatch(d.Batch)
	return c
}

// cloneBatch returns a copy of b that shares nothing with it.
func cloneBatch(b *webhook.BatchCompleted) *webhook.BatchCompleted {
	if b == nil {
		return nil
	}
	c := *b
	c.Counts = maps.Clone(b.Counts)
	return &c
}

// jobEvent is the outbox entry that completing j writes for e: e with
// the job's account and id, due at the completion time if e has no
// CreatedAt.
func jobEvent(j *job, e *webhook.Event, completed time.Time) webhook.Event {
	ev := *e
	ev.AccountID, ev.JobID = j.AccountID, j.ID
	if ev.CreatedAt.IsZero() {
		ev.CreatedAt = completed
	}
	return ev
}

// addDeliveryLocked stores ev as a pending delivery due at ev.CreatedAt.
func (s *Store) addDeliveryLocked(ev webhook.Event) {
	ev.Payload = slices.Clone(ev.Payload)
	ev.Batch = cloneBatch(ev.Batch)
	d := &webhook.Delivery{Event: ev, State: webhook.StatePending, NextAttempt: ev.CreatedAt}
	s.deliveries[ev.ID] = d
	s.pending[ev.ID] = d
}

// Enqueue implements [webhook.Outbox].
func (w *Webhooks) Enqueue(ctx context.Context, ev webhook.Event) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	s := w.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.deliveries[ev.ID]; ok {
		return webhook.ErrDuplicate
	}
	// An event holding a batch's data is kept with the bytes it stands
	// for, made once: the same bytes on every read.
	ev.Payload = slices.Clone(ev.Payload)
	ev.Batch = cloneBatch(ev.Batch)
	if err := ev.Expand(); err != nil {
		return err
	}
	s.addDeliveryLocked(ev)
	return nil
}

// Lease implements [webhook.Outbox].
func (w *Webhooks) Lease(ctx context.Context, p webhook.LeaseParams) ([]webhook.Delivery, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	if p.Limit <= 0 {
		return nil, fmt.Errorf("webhook: lease limit %d is not positive", p.Limit)
	}
	s := w.s
	s.mu.Lock()
	defer s.mu.Unlock()
	// A delivery is due when its next attempt has come and no live lease
	// holds it; an expired lease counts as none, so a crashed dispatcher's
	// deliveries come back on their own. Times are the caller's clock.
	var due []*webhook.Delivery
	for _, d := range s.pending {
		if !d.NextAttempt.After(p.Now) && (d.Lease.Token == "" || !p.Now.Before(d.Lease.Expires)) {
			due = append(due, d)
		}
	}
	slices.SortFunc(due, func(a, b *webhook.Delivery) int {
		return cmp.Or(a.NextAttempt.Compare(b.NextAttempt), cmp.Compare(a.ID, b.ID))
	})
	due = due[:min(len(due), p.Limit)]
	out := make([]webhook.Delivery, len(due))
	for i, d := range due {
		// A new random token per lease: the dispatcher that held an
		// expired lease can no longer record anything ([Webhooks.change]).
		d.Lease = webhook.Lease{EventID: d.ID, Token: rand.Text(), Expires: p.Now.Add(p.Duration)}
		out[i] = cloneDelivery(d)
	}
	return out, nil
}

// change applies f to the delivery l still holds: the compare-and-set on
// the lease token behind every change after leasing. A finished delivery
// leaves the pending index, so leasing never scans it again.
func (w *Webhooks) change(ctx context.Context, l webhook.Lease, f func(*webhook.Delivery)) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	s := w.s
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.deliveries[l.EventID]
	switch {
	case !ok:
		return webhook.ErrNotFound
	case d.State != webhook.StatePending || d.Lease.Token == "" || d.Lease.Token != l.Token:
		return webhook.ErrLeaseLost
	}
	f(d)
	if d.State != webhook.StatePending {
		delete(s.pending, d.ID)
	}
	return nil
}

// RecordAttempt implements [webhook.Outbox].
func (w *Webhooks) RecordAttempt(ctx context.Context, l webhook.Lease, a webhook.Attempt) error {
	return w.change(ctx, l, func(d *webhook.Delivery) { d.Attempts = append(d.Attempts, a) })
}

// Reschedule implements [webhook.Outbox].
func (w *Webhooks) Reschedule(ctx context.Context, l webhook.Lease, next time.Time) error {
	return w.change(ctx, l, func(d *webhook.Delivery) {
		d.Lease = webhook.Lease{}
		d.NextAttempt = next
	})
}

// MarkDelivered implements [webhook.Outbox].
func (w *Webhooks) MarkDelivered(ctx context.Context, l webhook.Lease, at time.Time) error {
	return w.change(ctx, l, func(d *webhook.Delivery) { finish(d, webhook.StateDelivered, at, "") })
}

// MarkDead implements [webhook.Outbox].
func (w *Webhooks) MarkDead(ctx context.Context, l webhook.Lease, at time.Time, reason string) error {
	return w.change(ctx, l, func(d *webhook.Delivery) { finish(d, webhook.StateDead, at, reason) })
}

func finish(d *webhook.Delivery, st webhook.State, at time.Time, reason string) {
	d.Lease = webhook.Lease{}
	d.State = st
	d.NextAttempt = time.Time{}
	d.FinishedAt = at
	d.Reason = reason
}

// Deliveries implements [webhook.Outbox].
func (w *Webhooks) Deliveries(ctx context.Context, p webhook.ListParams) ([]webhook.Delivery, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	limit := p.Limit
	if limit <= 0 {
		limit = webhook.DefaultListLimit
	}
	s := w.s
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []webhook.Delivery
	for _, d := range s.deliveries {
		if d.AccountID == p.AccountID && (p.Before == nil || p.Before.Older(d.CreatedAt, d.ID)) {
			c := cloneDelivery(d)
			c.Lease = webhook.Lease{}
			out = append(out, c)
		}
	}
	// Newest first, to the microsecond as the other backends store times.
	slices.SortFunc(out, func(a, b webhook.Delivery) int {
		return cmp.Or(cmp.Compare(b.CreatedAt.UnixMicro(), a.CreatedAt.UnixMicro()), cmp.Compare(b.ID, a.ID))
	})
	return out[:min(len(out), limit)], nil
}

// Pending implements [webhook.Outbox].
func (w *Webhooks) Pending(ctx context.Context) (int, error) {
	if err := ctxErr(ctx); err != nil {
		return 0, err
	}
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	return len(w.s.pending), nil
}

// OldestPending implements [webhook.OldestPender].
func (w *Webhooks) OldestPending(ctx context.Context) (time.Time, error) {
	if err := ctxErr(ctx); err != nil {
		return time.Time{}, err
	}
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	var oldest time.Time
	for _, d := range w.s.pending {
		if oldest.IsZero() || d.CreatedAt.Before(oldest) {
			oldest = d.CreatedAt
		}
	}
	return oldest, nil
}

// Prune implements [webhook.Outbox].
func (w *Webhooks) Prune(ctx context.Context, before time.Time) (int, error) {
	if err := ctxErr(ctx); err != nil {
		return 0, err
	}
	s := w.s
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
	e.Events = slices.Clone(e.Events)
	return e
}

// GetEndpoint implements [webhook.Endpoints].
func (w *Webhooks) GetEndpoint(ctx context.Context, accountID string) (webhook.Endpoint, error) {
	if err := ctxErr(ctx); err != nil {
		return webhook.Endpoint{}, err
	}
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	e, ok := w.s.endpoints[accountID]
	if !ok {
		return webhook.Endpoint{}, webhook.ErrNotFound
	}
	return cloneEndpoint(e), nil
}

// PutEndpoint implements [webhook.Endpoints].
func (w *Webhooks) PutEndpoint(ctx context.Context, p webhook.PutEndpointParams) (webhook.Endpoint, bool, error) {
	if err := ctxErr(ctx); err != nil {
		return webhook.Endpoint{}, false, err
	}
	s := w.s
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
	e.Events = slices.Clone(webhook.NormalizeEvents(p.Events))
	if p.Enabled {
		e.DisabledReason = ""
	}
	e.UpdatedAt = p.Now
	s.endpoints[p.AccountID] = e
	return cloneEndpoint(e), !ok, nil
}

// DeleteEndpoint implements [webhook.Endpoints].
func (w *Webhooks) DeleteEndpoint(ctx context.Context, accountID string) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	s := w.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.endpoints[accountID]; !ok {
		return webhook.ErrNotFound
	}
	delete(s.endpoints, accountID)
	return nil
}

// RotateSecret implements [webhook.Endpoints].
func (w *Webhooks) RotateSecret(ctx context.Context, p webhook.RotateSecretParams) (webhook.Endpoint, error) {
	if err := ctxErr(ctx); err != nil {
		return webhook.Endpoint{}, err
	}
	if _, err := webhook.ParseSecret(p.Secret); err != nil {
		return webhook.Endpoint{}, err
	}
	s := w.s
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
func (w *Webhooks) DisableEndpoint(ctx context.Context, p webhook.DisableEndpointParams) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	s := w.s
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
