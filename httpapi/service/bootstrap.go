package service

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/validmail/validmail/store"
)

// Errors of [Bootstrap].
var (
	// ErrKeyRevoked reports a bootstrap key that exists but was revoked.
	ErrKeyRevoked = errors.New("service: the bootstrap key was revoked")
	// ErrKeyForeign reports a bootstrap key that belongs to another
	// account.
	ErrKeyForeign = errors.New("service: the bootstrap key belongs to another account")
	// ErrKeyMalformed reports a bootstrap key that is not a well-formed
	// API key.
	ErrKeyMalformed = errors.New("service: malformed bootstrap key")
)

// BootstrapParams names the account and key [Bootstrap] makes sure of.
type BootstrapParams struct {
	// Email is the account's email; required.
	Email string
	// Credits is the signup grant when the account is created; 0 means
	// [store.DefaultSignupCredits].
	Credits int64
	// Key, when set, must be an API key of the account with every
	// permission, and is created when missing (for scripts and tests that
	// know their key in advance).
	Key string
}

// ensureAccount returns the account with the email, creating it with
// signupCredits (0 means [store.DefaultSignupCredits]) when it is missing.
// Processes that race to create it all end with the same account.
func ensureAccount(ctx context.Context, accts store.Accounts, email string, signupCredits int64) (acct store.Account, created bool, err error) {
	acct, err = accts.GetAccountByEmail(ctx, email)
	if err == nil {
		return acct, false, nil
	}
	if !errors.Is(err, store.ErrNotFound) {
		return acct, false, fmt.Errorf("look up account: %w", err)
	}
	acct, err = accts.CreateAccount(ctx, store.CreateAccountParams{Email: email, SignupCredits: signupCredits})
	if errors.Is(err, store.ErrEmailTaken) {
		// Another process created it between our lookup and our insert.
		acct, err = accts.GetAccountByEmail(ctx, email)
		return acct, false, err
	}
	if err != nil {
		return acct, false, fmt.Errorf("create account: %w", err)
	}
	return acct, true, nil
}

// ensureKey makes secret a key of the account with every permission,
// creating it when it is missing. It fails when the secret is a key of
// another account or a revoked key, and when the key lacks a permission.
func ensureKey(ctx context.Context, accts store.Accounts, acct store.Account, secret string) (created bool, err error) {
	if err := store.CheckSecret(secret); err != nil {
		return false, fmt.Errorf("%w: %v (want %s and 43 letters or digits)", ErrKeyMalformed, err, store.SecretPrefix)
	}
	check := func(k store.Key) error {
		if k.AccountID != acct.ID {
			return ErrKeyForeign
		}
		for _, p := range store.AllPermissions() {
			if !slices.Contains(k.Permissions, p) {
				return fmt.Errorf("the bootstrap key lacks the permission %q", p)
			}
		}
		return nil
	}
	k, err := accts.Authenticate(ctx, secret)
	if err == nil {
		return false, check(k)
	}
	if !errors.Is(err, store.ErrInvalidKey) {
		return false, fmt.Errorf("look up key: %w", err)
	}
	_, _, err = accts.CreateKey(ctx, store.CreateKeyParams{
		AccountID:   acct.ID,
		Name:        "bootstrap",
		Permissions: store.AllPermissions(),
		Secret:      secret,
	})
	if errors.Is(err, store.ErrKeyExists) {
		// Created by another process meanwhile, or revoked before.
		k, err := accts.Authenticate(ctx, secret)
		if errors.Is(err, store.ErrInvalidKey) {
			return false, ErrKeyRevoked
		}
		if err != nil {
			return false, fmt.Errorf("look up key: %w", err)
		}
		return false, check(k)
	}
	if err != nil {
		return false, fmt.Errorf("create key: %w", err)
	}
	return true, nil
}

// Bootstrap makes sure the account with p.Email exists (created with
// p.Credits) and, when p.Key is not empty, that p.Key is one of its keys
// with every permission. When p.Key is empty and the account is new, it
// creates a key with every permission and returns its secret, shown
// nowhere else. Several processes may bootstrap the same account at once:
// they all end with the same account and key. A service binary calls it
// at start, for the operator's first account or a test's.
func Bootstrap(ctx context.Context, accts store.Accounts, p BootstrapParams) (acct store.Account, newSecret string, err error) {
	secret := p.Key
	acct, created, err := ensureAccount(ctx, accts, p.Email, p.Credits)
	if err != nil {
		return acct, "", err
	}
	if secret != "" {
		_, err = ensureKey(ctx, accts, acct, secret)
		return acct, "", err
	}
	if !created {
		return acct, "", nil
	}
	_, newSecret, err = accts.CreateKey(ctx, store.CreateKeyParams{
		AccountID:   acct.ID,
		Name:        "bootstrap",
		Permissions: store.AllPermissions(),
	})
	if err != nil {
		return acct, "", fmt.Errorf("create key: %w", err)
	}
	return acct, newSecret, nil
}
