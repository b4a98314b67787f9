package main

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/validmail/validmail/store"
)

// errKeyRevoked reports a bootstrap key that exists but was revoked.
var errKeyRevoked = errors.New("the bootstrap key was revoked")

// errKeyForeign reports a bootstrap key that belongs to another account.
var errKeyForeign = errors.New("the bootstrap key belongs to another account")

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
		return false, fmt.Errorf("%w: -bootstrap-key: %v (want %s and 43 letters or digits)", errUsage, err, store.SecretPrefix)
	}
	check := func(k store.Key) error {
		if k.AccountID != acct.ID {
			return errKeyForeign
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
			return false, errKeyRevoked
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

// bootstrap makes sure the account with the email exists (created with
// signupCredits, 0 meaning the default) and, when secret
// is not empty, that secret is one of its keys with every permission. When
// secret is empty and the account is new, it creates a key with every
// permission and returns its secret, shown nowhere else.
func bootstrap(ctx context.Context, accts store.Accounts, email string, signupCredits int64, secret string) (acct store.Account, newSecret string, err error) {
	acct, created, err := ensureAccount(ctx, accts, email, signupCredits)
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
