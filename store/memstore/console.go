package memstore

import (
	"context"
	"time"

	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/store"
)

// consoleState is what the console keeps beyond accounts: the signup
// grants held back until an email is confirmed, and the mailed tokens.
// Its maps are made on first use; the Store's mutex guards them.
type consoleState struct {
	held   map[string]int64       // unconfirmed account id → its signup grant
	tokens map[string]store.Token // token hash → token
	// sweepAt is the count of tokens at which the expired ones are
	// dropped next: twice what was left at the last sweep, so that a
	// sweep's cost is spread over as many creations as it looks at.
	sweepAt int
}

func (c *consoleState) hold(accountID string, credits int64) {
	if c.held == nil {
		c.held = make(map[string]int64)
	}
	c.held[accountID] = credits
}

var _ store.Tokens = (*Store)(nil)

// ConfirmAccount implements [store.Accounts]: the confirmation and the
// grant happen under the Store's lock.
func (s *Store) ConfirmAccount(ctx context.Context, id string) (int64, error) {
	if err := ctxErr(ctx); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.accounts[id]
	if !ok {
		return 0, store.ErrNotFound
	}
	n, held := s.console.held[id]
	if !held {
		return 0, nil
	}
	if n > 0 {
		c := credits.Change{AccountID: id, Delta: n, Reason: credits.ReasonSignup, Reference: "signup", IdempotencyKey: "signup"}
		if _, err := s.applyLocked(c); err != nil {
			return 0, err
		}
	}
	delete(s.console.held, id)
	a.Unconfirmed = false
	return n, nil
}

// CreateToken implements [store.Tokens]. Expired tokens are dropped as
// tokens are created, all at once when their count has doubled since the
// last time: a creation costs the same, on average, however many tokens
// are kept.
func (s *Store) CreateToken(ctx context.Context, t store.Token) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.accounts[t.AccountID]; !ok {
		return store.ErrNotFound
	}
	if s.console.tokens == nil {
		s.console.tokens = make(map[string]store.Token)
	}
	if len(s.console.tokens) >= s.console.sweepAt {
		now := time.Now()
		for h, old := range s.console.tokens {
			if !now.Before(old.Expiry) {
				delete(s.console.tokens, h)
			}
		}
		s.console.sweepAt = max(64, 2*len(s.console.tokens))
	}
	s.console.tokens[t.Hash] = t
	return nil
}

// TakeToken implements [store.Tokens].
func (s *Store) TakeToken(ctx context.Context, purpose store.TokenPurpose, hash string) (store.Token, error) {
	if err := ctxErr(ctx); err != nil {
		return store.Token{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.console.tokens[hash]
	if !ok || t.Purpose != purpose {
		return store.Token{}, store.ErrTokenInvalid
	}
	delete(s.console.tokens, hash)
	if !time.Now().Before(t.Expiry) {
		return store.Token{}, store.ErrTokenInvalid
	}
	return t, nil
}
