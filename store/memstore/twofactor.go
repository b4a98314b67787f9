package memstore

import (
	"context"
	"slices"

	"github.com/validmail/validmail/store"
)

var _ store.TwoFactor = (*Store)(nil)

// twoFactorState is what the Store keeps of second factors; its maps are
// made on first use and the Store's mutex guards them.
type twoFactorState struct {
	totp     map[string]*store.TOTP // login id → second factor
	required map[string]bool        // account id → team requires one
}

// EnableTOTP implements [store.TwoFactor].
func (s *Store) EnableTOTP(ctx context.Context, t store.TOTP) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	if len(t.RecoveryHashes) > store.MaxRecoveryCodes {
		return store.ErrTooManyCodes
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.accounts[t.AccountID]; !ok {
		return store.ErrNotFound
	}
	if _, ok := s.twoFactor.totp[t.LoginID]; ok {
		return store.ErrTOTPExists
	}
	if s.twoFactor.totp == nil {
		s.twoFactor.totp = make(map[string]*store.TOTP)
	}
	t.RecoveryHashes = slices.Clone(t.RecoveryHashes)
	s.twoFactor.totp[t.LoginID] = &t
	return nil
}

// TOTP implements [store.TwoFactor].
func (s *Store) TOTP(ctx context.Context, loginID string) (store.TOTP, error) {
	if err := ctxErr(ctx); err != nil {
		return store.TOTP{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.twoFactor.totp[loginID]
	if !ok {
		return store.TOTP{}, store.ErrNotFound
	}
	out := *t
	out.RecoveryHashes = slices.Clone(t.RecoveryHashes)
	return out, nil
}

// DisableTOTP implements [store.TwoFactor].
func (s *Store) DisableTOTP(ctx context.Context, loginID string) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.twoFactor.totp[loginID]; !ok {
		return store.ErrNotFound
	}
	delete(s.twoFactor.totp, loginID)
	return nil
}

// UseTOTPStep implements [store.TwoFactor].
func (s *Store) UseTOTPStep(ctx context.Context, loginID string, step int64) (bool, error) {
	if err := ctxErr(ctx); err != nil {
		return false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.twoFactor.totp[loginID]
	if !ok {
		return false, store.ErrNotFound
	}
	if step <= t.LastStep {
		return false, nil
	}
	t.LastStep = step
	return true, nil
}

// UseRecoveryCode implements [store.TwoFactor].
func (s *Store) UseRecoveryCode(ctx context.Context, loginID, hash string) (bool, error) {
	if err := ctxErr(ctx); err != nil {
		return false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.twoFactor.totp[loginID]
	if !ok {
		return false, store.ErrNotFound
	}
	i := slices.Index(t.RecoveryHashes, hash)
	if i < 0 {
		return false, nil
	}
	t.RecoveryHashes = slices.Delete(t.RecoveryHashes, i, i+1)
	return true, nil
}

// SetTeamTOTP implements [store.TwoFactor].
func (s *Store) SetTeamTOTP(ctx context.Context, accountID string, required bool) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.accounts[accountID]; !ok {
		return store.ErrNotFound
	}
	if s.twoFactor.required == nil {
		s.twoFactor.required = make(map[string]bool)
	}
	if required {
		s.twoFactor.required[accountID] = true
	} else {
		delete(s.twoFactor.required, accountID)
	}
	return nil
}

// TeamTOTP implements [store.TwoFactor].
func (s *Store) TeamTOTP(ctx context.Context, accountID string) (bool, error) {
	if err := ctxErr(ctx); err != nil {
		return false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.twoFactor.required[accountID], nil
}
