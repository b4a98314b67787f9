package memstore

import (
	"context"
	"fmt"

	"github.com/validmail/validmail/billing"
)

// RecordCheckout implements [billing.Store].
func (s *Store) RecordCheckout(ctx context.Context, c billing.Checkout) (billing.Checkout, error) {
	if err := c.Check(); err != nil {
		return billing.Checkout{}, err
	}
	if err := ctx.Err(); err != nil {
		return billing.Checkout{}, fmt.Errorf("memstore: record checkout: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.checkouts[c.ID]; ok {
		return billing.Checkout{}, fmt.Errorf("%w: %s", billing.ErrCheckoutExists, c.ID)
	}
	c.CreatedAt = now()
	s.checkouts[c.ID] = c
	return c, nil
}

// Checkout implements [billing.Store].
func (s *Store) Checkout(ctx context.Context, id string) (billing.Checkout, error) {
	if err := ctx.Err(); err != nil {
		return billing.Checkout{}, fmt.Errorf("memstore: checkout: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.checkouts[id]
	if !ok {
		return billing.Checkout{}, billing.ErrNotFound
	}
	return c, nil
}
