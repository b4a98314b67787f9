package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/validmail/validmail/billing"
)

var _ billing.Store = (*Store)(nil)

// RecordCheckout implements [billing.Store]: one insert, the id its
// primary key.
func (s *Store) RecordCheckout(ctx context.Context, c billing.Checkout) (billing.Checkout, error) {
	if err := c.Check(); err != nil {
		return billing.Checkout{}, err
	}
	err := s.pool.QueryRow(ctx, s.sql(`
		INSERT INTO {schema}.checkouts (id, account, credits, price, currency, plan) VALUES ($1, $2, $3, $4, $5, $6)
		RETURNING created_at`), c.ID, c.AccountID, c.Pack.Credits, c.Pack.Price, c.Pack.Currency, c.Pack.Plan).Scan(&c.CreatedAt)
	if isUniqueViolation(err, "checkouts_pkey") {
		return billing.Checkout{}, fmt.Errorf("%w: %s", billing.ErrCheckoutExists, c.ID)
	}
	if err != nil {
		return billing.Checkout{}, fail(ctx, "record checkout", err)
	}
	return c, nil
}

// Checkout implements [billing.Store].
func (s *Store) Checkout(ctx context.Context, id string) (billing.Checkout, error) {
	c := billing.Checkout{ID: id}
	err := s.pool.QueryRow(ctx, s.sql(`
		SELECT account, credits, price, currency, plan, created_at FROM {schema}.checkouts WHERE id = $1`), id).
		Scan(&c.AccountID, &c.Pack.Credits, &c.Pack.Price, &c.Pack.Currency, &c.Pack.Plan, &c.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return billing.Checkout{}, billing.ErrNotFound
	}
	if err != nil {
		return billing.Checkout{}, fail(ctx, "checkout", err)
	}
	return c, nil
}
