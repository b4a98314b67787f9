package store

import (
	"context"
	"errors"
	"sync"
	"time"
)

// UsageBuffer is a [Usage] that counts in memory and writes the counts
// to another Usage in one call per account, month and status at each
// [UsageBuffer.Flush]: a busy API then costs the backend one write per
// flush interval rather than one per validation. Counts not yet flushed
// are lost if the process dies (a statistic, never a credit: credits are
// in the ledger). Reads add the counts not yet flushed to the stored
// ones. It is safe for concurrent use.
type UsageBuffer struct {
	next Usage

	mu      sync.Mutex
	pending map[usageKey]*usageCount
}

type usageKey struct{ account, month, status string }

type usageCount struct {
	at time.Time // a time in the month, for next.AddUsage
	n  int
}

// NewUsageBuffer returns a buffer in front of next.
func NewUsageBuffer(next Usage) *UsageBuffer {
	return &UsageBuffer{next: next, pending: make(map[usageKey]*usageCount)}
}

// AddUsage implements [Usage]; it never fails and never waits for the
// backend.
func (b *UsageBuffer) AddUsage(_ context.Context, accountID string, at time.Time, status string, n int) error {
	k := usageKey{accountID, MonthKey(at), status}
	b.mu.Lock()
	defer b.mu.Unlock()
	if c := b.pending[k]; c != nil {
		c.n += n
	} else {
		b.pending[k] = &usageCount{at: at, n: n}
	}
	return nil
}

// MonthUsage implements [Usage]: the stored counts plus those not yet
// flushed.
func (b *UsageBuffer) MonthUsage(ctx context.Context, accountID string, at time.Time) (map[string]int, error) {
	m, err := b.next.MonthUsage(ctx, accountID, at)
	if err != nil {
		return nil, err
	}
	month := MonthKey(at)
	b.mu.Lock()
	defer b.mu.Unlock()
	for k, c := range b.pending {
		if k.account == accountID && k.month == month {
			if m == nil {
				m = make(map[string]int)
			}
			m[k.status] += c.n
		}
	}
	return m, nil
}

// Flush writes the counts gathered since the last flush. Counts it could
// not write are kept for the next one; the error joins the failures.
func (b *UsageBuffer) Flush(ctx context.Context) error {
	b.mu.Lock()
	batch := b.pending
	b.pending = make(map[usageKey]*usageCount, len(batch))
	b.mu.Unlock()
	var errs []error
	for k, c := range batch {
		if err := b.next.AddUsage(ctx, k.account, c.at, k.status, c.n); err != nil {
			errs = append(errs, err)
			b.AddUsage(ctx, k.account, c.at, k.status, c.n)
		}
	}
	return errors.Join(errs...)
}

// Run flushes every interval until ctx ends, then once more (with a
// deadline of its own), and returns the last flush's error. onError, when
// not nil, is told of the failed flushes before that.
func (b *UsageBuffer) Run(ctx context.Context, interval time.Duration, onError func(error)) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			return b.Flush(fctx)
		case <-t.C:
			if err := b.Flush(ctx); err != nil && onError != nil {
				onError(err)
			}
		}
	}
}
