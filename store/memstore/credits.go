package memstore

import (
	"context"
	"fmt"
	"strconv"

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
	return append([]credits.Entry(nil), s.entries[p.AccountID]...), nil
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
	if c.IdempotencyKey != "" {
		if i, ok := s.idem[c.AccountID][c.IdempotencyKey]; ok {
			e := s.entries[c.AccountID][i]
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
	e := credits.Entry{
		ID:             strconv.FormatUint(s.entrySeq, 10),
		AccountID:      c.AccountID,
		Delta:          c.Delta,
		Reason:         c.Reason,
		Reference:      c.Reference,
		IdempotencyKey: c.IdempotencyKey,
		Time:           now(),
	}
	s.entries[c.AccountID] = append(s.entries[c.AccountID], e)
	s.balances[c.AccountID] += c.Delta
	if c.IdempotencyKey != "" {
		m := s.idem[c.AccountID]
		if m == nil {
			m = make(map[string]int)
			s.idem[c.AccountID] = m
		}
		m[c.IdempotencyKey] = len(s.entries[c.AccountID]) - 1
	}
	return e
}
