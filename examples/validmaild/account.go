package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/store"
)

// runAccount runs "validmaild account SUBCOMMAND".
func runAccount(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "create" {
		fmt.Fprintln(stderr, "Usage: validmaild account create -email E -store URL")
		return fmt.Errorf("%w: want \"account create\"", errUsage)
	}
	fs := newFlagSet("validmaild account create", stderr)
	email := fs.String("email", "", "the new account's `email` (required)")
	storeURL := fs.String("store", "", "the shared store: postgres://… or redis://… (required)")
	if err := parseFlags(fs, args[1:], func(name string) string {
		if name == envName("store") {
			return getenv(name) // the only flag shared with the service
		}
		return ""
	}); err != nil {
		return err
	}
	if *email == "" || *storeURL == "" || fs.NArg() > 0 {
		fs.Usage()
		return fmt.Errorf("%w: account create needs -email and -store", errUsage)
	}
	if _, err := emailcheck.ParseAddress(*email, emailcheck.SyntaxOptions{}); err != nil {
		return fmt.Errorf("%w: -email %q is not an email address: %v", errUsage, *email, err)
	}
	b, err := openBackend(ctx, *storeURL, 0, slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	defer b.Close()
	if !b.Shared {
		return fmt.Errorf("%w: %w", errUsage, errNotShared)
	}
	acct, err := b.Accounts.CreateAccount(ctx, store.CreateAccountParams{Email: *email})
	if errors.Is(err, store.ErrEmailTaken) {
		return fmt.Errorf("an account with the email %q exists already", *email)
	}
	if err != nil {
		return fmt.Errorf("create account: %w", err)
	}
	_, secret, err := b.Accounts.CreateKey(ctx, store.CreateKeyParams{AccountID: acct.ID, Name: "default"})
	if err != nil {
		return fmt.Errorf("create key: %w", err)
	}
	return json.NewEncoder(stdout).Encode(struct {
		AccountID string `json:"account_id"`
		APIKey    string `json:"api_key"`
	}{acct.ID, secret})
}
