package redisstore

import (
	"context"
	"fmt"
	"strconv"

	"github.com/validmail/validmail/billing"
)

var _ billing.Store = (*Store)(nil)

// scriptRecordCheckout writes a checkout's hash unless its id is taken,
// returning the time it was recorded (microseconds) or failing EXISTS.
var scriptRecordCheckout = script(`
expect(KEYS[1], 'hash')
if redis.call('EXISTS', KEYS[1]) == 1 then fail('EXISTS') end
local t = str(now_us())
redis.call('HSET', KEYS[1], 'account', ARGV[1], 'credits', ARGV[2], 'price', ARGV[3], 'currency', ARGV[4], 'plan', ARGV[5], 'created', t)
return t
`)

// RecordCheckout implements [billing.Store]: one script on the
// checkout's hash, beside the accounts in the store's own slot.
func (s *Store) RecordCheckout(ctx context.Context, c billing.Checkout) (billing.Checkout, error) {
	if err := c.Check(); err != nil {
		return billing.Checkout{}, err
	}
	if err := checkCtx(ctx, "record checkout"); err != nil {
		return billing.Checkout{}, err
	}
	if err := s.checkMarker(ctx); err != nil {
		return billing.Checkout{}, err
	}
	t, err := s.run(ctx, scriptRecordCheckout, []string{s.key("checkout:" + c.ID)}, c.AccountID,
		strconv.FormatInt(c.Pack.Credits, 10), strconv.FormatInt(c.Pack.Price, 10), c.Pack.Currency, c.Pack.Plan).Text()
	if err != nil {
		if code, _ := code(err); code == "EXISTS" {
			return billing.Checkout{}, fmt.Errorf("%w: %s", billing.ErrCheckoutExists, c.ID)
		}
		return billing.Checkout{}, s.wrap(ctx, "record checkout", err)
	}
	if c.CreatedAt, err = micros(t); err != nil {
		return billing.Checkout{}, err
	}
	return c, nil
}

// Checkout implements [billing.Store].
func (s *Store) Checkout(ctx context.Context, id string) (billing.Checkout, error) {
	if err := checkCtx(ctx, "checkout"); err != nil {
		return billing.Checkout{}, err
	}
	if id == "" {
		return billing.Checkout{}, billing.ErrNotFound
	}
	m, err := s.rdb.HGetAll(ctx, s.key("checkout:"+id)).Result()
	if err != nil {
		return billing.Checkout{}, s.wrap(ctx, "checkout", err)
	}
	if len(m) == 0 {
		return billing.Checkout{}, billing.ErrNotFound
	}
	c := billing.Checkout{ID: id, AccountID: m["account"], Pack: billing.Pack{Currency: m["currency"], Plan: m["plan"]}}
	c.Pack.Credits, err = strconv.ParseInt(m["credits"], 10, 64)
	if err == nil {
		c.Pack.Price, err = strconv.ParseInt(m["price"], 10, 64)
	}
	if err == nil {
		c.CreatedAt, err = micros(m["created"])
	}
	if err != nil {
		return billing.Checkout{}, fmt.Errorf("%w: checkout %s: %v", ErrBadData, id, err)
	}
	return c, nil
}
