package memstore

import (
	"context"
	"slices"

	"github.com/google/uuid"
	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/store"
)

// CreateAccount implements [store.Accounts].
func (s *Store) CreateAccount(ctx context.Context, p store.CreateAccountParams) (store.Account, error) {
	if err := ctxErr(ctx); err != nil {
		return store.Account{}, err
	}
	if p.Email == "" {
		return store.Account{}, store.ErrInvalidEmail
	}
	norm := store.NormalizeEmail(p.Email)
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.byEmail[norm]; ok {
		return store.Account{}, store.ErrEmailTaken
	}
	a := &store.Account{
		ID:        uuid.NewString(),
		Email:     p.Email,
		Plan:      p.PlanOrDefault(),
		CreatedAt: now(),
	}
	// The grant is written under the same lock as the account: no one sees
	// an account without its signup credits. Its fixed idempotency key
	// makes a second grant impossible.
	if p.Unconfirmed {
		a.Unconfirmed = true
		s.console.hold(a.ID, p.Credits())
	} else if n := p.Credits(); n > 0 {
		c := credits.Change{AccountID: a.ID, Delta: n, Reason: credits.ReasonSignup, Reference: "signup", IdempotencyKey: "signup"}
		if _, err := s.applyLocked(c); err != nil {
			return store.Account{}, err
		}
	}
	s.accounts[a.ID] = a
	s.byEmail[norm] = a.ID
	if p.PasswordHash != "" {
		s.passwords[a.ID] = p.PasswordHash
	}
	return *a, nil
}

// PasswordHash implements [store.Passwords].
func (s *Store) PasswordHash(ctx context.Context, accountID string) (string, error) {
	if err := ctxErr(ctx); err != nil {
		return "", err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.accounts[accountID]; !ok {
		return "", store.ErrNotFound
	}
	return s.passwords[accountID], nil
}

// SetPasswordHash implements [store.Passwords].
func (s *Store) SetPasswordHash(ctx context.Context, accountID, hash string) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.accounts[accountID]; !ok {
		return store.ErrNotFound
	}
	if hash == "" {
		delete(s.passwords, accountID)
	} else {
		s.passwords[accountID] = hash
	}
	return nil
}

// GetAccount implements [store.Accounts].
func (s *Store) GetAccount(ctx context.Context, id string) (store.Account, error) {
	if err := ctxErr(ctx); err != nil {
		return store.Account{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.accounts[id]
	if !ok {
		return store.Account{}, store.ErrNotFound
	}
	return *a, nil
}

// GetAccountByEmail implements [store.Accounts].
func (s *Store) GetAccountByEmail(ctx context.Context, email string) (store.Account, error) {
	if err := ctxErr(ctx); err != nil {
		return store.Account{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	id, ok := s.byEmail[store.NormalizeEmail(email)]
	if !ok {
		return store.Account{}, store.ErrNotFound
	}
	return *s.accounts[id], nil
}

// CreateKey implements [store.Accounts].
func (s *Store) CreateKey(ctx context.Context, p store.CreateKeyParams) (store.Key, string, error) {
	if err := ctxErr(ctx); err != nil {
		return store.Key{}, "", err
	}
	secret, hash, prefix, perms, err := store.NewKeyMaterial(p)
	if err != nil {
		return store.Key{}, "", err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.accounts[p.AccountID]; !ok {
		return store.Key{}, "", store.ErrNotFound
	}
	if _, ok := s.keyByHash[hash]; ok {
		return store.Key{}, "", store.ErrKeyExists
	}
	if p.MaxActive > 0 {
		active := 0
		for _, id := range s.keysByAccount[p.AccountID] {
			if !s.keys[id].Revoked() {
				active++
			}
		}
		if active >= p.MaxActive {
			return store.Key{}, "", store.ErrKeyLimit
		}
	}
	k := &store.Key{
		ID:          uuid.NewString(),
		AccountID:   p.AccountID,
		Name:        p.Name,
		Prefix:      prefix,
		Hash:        hash,
		Permissions: perms,
		CreatedAt:   now(),
	}
	s.keys[k.ID] = k
	s.keyByHash[hash] = k.ID
	s.keysByAccount[k.AccountID] = append(s.keysByAccount[k.AccountID], k.ID)
	return copyKey(k), secret, nil
}

func copyKey(k *store.Key) store.Key {
	c := *k
	c.Permissions = slices.Clone(k.Permissions)
	return c
}

// ListKeys implements [store.Accounts].
func (s *Store) ListKeys(ctx context.Context, accountID string) ([]store.Key, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := s.keysByAccount[accountID]
	out := make([]store.Key, 0, len(ids))
	for _, id := range ids {
		out = append(out, copyKey(s.keys[id]))
	}
	return out, nil
}

// RevokeKey implements [store.Accounts].
func (s *Store) RevokeKey(ctx context.Context, accountID, keyID string) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k, ok := s.keys[keyID]
	if !ok || k.AccountID != accountID {
		return store.ErrNotFound
	}
	if k.RevokedAt.IsZero() {
		k.RevokedAt = now()
	}
	return nil
}

// Authenticate implements [store.Accounts].
func (s *Store) Authenticate(ctx context.Context, secret string) (store.Key, error) {
	if err := ctxErr(ctx); err != nil {
		return store.Key{}, err
	}
	// A malformed secret is refused before hashing: the same answer as an
	// unknown key, at no cost. Only the hash is ever compared or kept.
	if store.CheckSecret(secret) != nil {
		return store.Key{}, store.ErrInvalidKey
	}
	hash := store.HashSecret(secret)
	s.mu.Lock()
	defer s.mu.Unlock()
	id, ok := s.keyByHash[hash]
	if !ok {
		return store.Key{}, store.ErrInvalidKey
	}
	k := s.keys[id]
	// A revoked key looks like an unknown one to its caller.
	if k.Revoked() {
		return store.Key{}, store.ErrInvalidKey
	}
	k.LastUsedAt = now()
	return copyKey(k), nil
}

// SetPlan implements [store.PlanSetter].
func (s *Store) SetPlan(ctx context.Context, id, plan string) error {
	if err := store.CheckPlan(plan); err != nil {
		return err
	}
	if err := ctxErr(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.accounts[id]
	if !ok {
		return store.ErrNotFound
	}
	a.Plan = plan
	return nil
}
