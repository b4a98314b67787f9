package memstore

import (
	"context"
	"fmt"

	"github.com/validmail/validmail/credits"
)

// Balance implements [credits.Store].
func (s *Store) Balance(ctx context.Context, account string) (int64, error) {
	if err := ctxErr(ctx); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.balances[account], nil
}

// Apply implements [credits.Store].
func (s *Store) Apply(ctx context.Context, c credits.Change) (credits.Entry, error) {
	if err := ctxErr(ctx); err != nil {
		return credits.Entry{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.applyLocked(c)
}

// History implements [credits.Store].
func (s *Store) History(ctx context.Context, p credits.HistoryParams) ([]credits.Entry, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ledgers[p.AccountID].entries(p.AccountID), nil
}

// HistoryPage implements [credits.PageStore].
func (s *Store) HistoryPage(ctx context.Context, p credits.PageParams) (credits.Page, error) {
	if err := ctxErr(ctx); err != nil {
		return credits.Page{}, err
	}
	if p.Before != "" {
		if _, err := credits.ParseID(p.Before); err != nil {
			return credits.Page{}, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ledgers[p.AccountID].page(p.AccountID, p), nil
}

// Totals implements [credits.TotalsStore] from the totals each account's
// ledger keeps as entries are appended.
func (s *Store) Totals(ctx context.Context, p credits.TotalsParams) ([]credits.DayTotal, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ledgers[p.AccountID].dayTotals(credits.Day(p.From), credits.Day(p.To)), nil
}

// checkLocked reports what applying c would do without writing: a replayed
// entry, or an error. Multi-part changes (a charged batch, a completion
// with its refund) call it before their first write, so that a refused
// charge leaves nothing half done.
func (s *Store) checkLocked(c credits.Change) (replay *credits.Entry, err error) {
	if c.AccountID == "" || c.Delta == 0 {
		return nil, fmt.Errorf("%w: account %q, delta %d", credits.ErrInvalidAmount, c.AccountID, c.Delta)
	}
	// A key already used answers with its first entry when the change is
	// the same, and refuses a different change rather than guess.
	if l := s.ledgers[c.AccountID]; c.IdempotencyKey != "" && l != nil {
		if ref, ok := l.idem[c.IdempotencyKey]; ok {
			e := l.chunks[ref.chunk][ref.off].public(c.AccountID)
			if e.Delta != c.Delta || e.Reason != c.Reason {
				return nil, fmt.Errorf("%w: key %q", credits.ErrIdempotencyConflict, c.IdempotencyKey)
			}
			e.Replayed = true
			return &e, nil
		}
	}
	// No overdraft: a charge is all or nothing.
	if bal := s.balances[c.AccountID]; c.Delta < 0 && bal+c.Delta < 0 {
		return nil, &credits.InsufficientError{Balance: bal, Required: -c.Delta}
	}
	return nil, nil
}

func (s *Store) applyLocked(c credits.Change) (credits.Entry, error) {
	replay, err := s.checkLocked(c)
	if err != nil {
		return credits.Entry{}, err
	}
	if replay != nil {
		return *replay, nil
	}
	return s.writeLocked(c), nil
}

// writeLocked appends the entry for c, which checkLocked has accepted.
func (s *Store) writeLocked(c credits.Change) credits.Entry {
	s.entrySeq++
	e := entry{
		seq:       s.entrySeq,
		delta:     c.Delta,
		reason:    c.Reason,
		reference: c.Reference,
		key:       c.IdempotencyKey,
		at:        now(),
	}
	l := s.ledgers[c.AccountID]
	if l == nil {
		l = &ledger{}
		s.ledgers[c.AccountID] = l
	}
	ref := l.append(e)
	s.balances[c.AccountID] += c.Delta
	if c.IdempotencyKey != "" {
		if l.idem == nil {
			l.idem = make(map[string]entryRef)
		}
		l.idem[c.IdempotencyKey] = ref
	}
	return e.public(c.AccountID)
}

var _ credits.GroupStore = (*Store)(nil)

// ApplyGroup implements [credits.GroupStore]: the changes are applied in
// order under one hold of the store's lock.
func (s *Store) ApplyGroup(ctx context.Context, cs []credits.Change) ([]credits.Entry, []error, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, nil, err
	}
	if err := credits.CheckGroup(cs); err != nil {
		return nil, nil, err
	}
	entries := make([]credits.Entry, len(cs))
	errs := make([]error, len(cs))
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, c := range cs {
		entries[i], errs[i] = s.applyLocked(c)
	}
	return entries, errs, nil
}
