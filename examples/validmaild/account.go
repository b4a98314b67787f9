package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/httpapi/dashboard"
	"github.com/validmail/validmail/store"
)

// runAccount runs "validmaild account SUBCOMMAND".
func runAccount(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		switch args[0] {
		case "set-password":
			return runSetPassword(ctx, args[1:], getenv, stdin, stdout, stderr)
		case "grant":
			return runGrant(ctx, args[1:], getenv, stdout, stderr)
		case "show":
			return runShow(ctx, args[1:], getenv, stdout, stderr)
		case "set-plan":
			return runSetPlan(ctx, args[1:], getenv, stdout, stderr)
		}
	}
	if len(args) == 0 || args[0] != "create" {
		fmt.Fprintln(stderr, accountUsage)
		return fmt.Errorf("%w: want \"account create\", \"set-password\", \"grant\", \"show\" or \"set-plan\"", errUsage)
	}
	fs := newFlagSet("validmaild account create", stderr)
	email := fs.String("email", "", "the new account's `email` (required)")
	storeURL := fs.String("store", "", "the shared store: postgres://…, redis://… or redis+cluster://… (required)")
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
	b, err := openBackend(ctx, *storeURL, 0, false, false, slog.New(slog.DiscardHandler))
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

// runSetPassword runs "validmaild account set-password": the new password
// is read from the first line of stdin, never from the command line,
// where other users of the machine could see it.
func runSetPassword(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlagSet("validmaild account set-password", stderr)
	email := fs.String("email", "", "the account's `email` (required)")
	storeURL := fs.String("store", "", "the shared store: postgres://…, redis://… or redis+cluster://… (required)")
	if err := parseFlags(fs, args, func(name string) string {
		if name == envName("store") {
			return getenv(name)
		}
		return ""
	}); err != nil {
		return err
	}
	if *email == "" || *storeURL == "" || fs.NArg() > 0 {
		fs.Usage()
		return fmt.Errorf("%w: account set-password needs -email and -store, and the password on stdin", errUsage)
	}
	line, err := bufio.NewReader(io.LimitReader(stdin, 4096)).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("reading the password from stdin: %w", err)
	}
	password := strings.TrimRight(line, "\r\n")
	hash, err := dashboard.HashPassword(ctx, password)
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	b, err := openBackend(ctx, *storeURL, 0, false, false, slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	defer b.Close()
	if !b.Shared {
		return fmt.Errorf("%w: %w", errUsage, errNotShared)
	}
	if b.Passwords == nil {
		return fmt.Errorf("%w: the store keeps no passwords", errUsage)
	}
	acct, err := b.Accounts.GetAccountByEmail(ctx, *email)
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("no account has the email %q", *email)
	}
	if err != nil {
		return fmt.Errorf("find account: %w", err)
	}
	if err := b.Passwords.SetPasswordHash(ctx, acct.ID, hash); err != nil {
		return fmt.Errorf("set password: %w", err)
	}
	// A new password ends every console session of the account.
	if b.Sessions != nil {
		if err := b.Sessions.DeleteAccountSessions(ctx, acct.ID, ""); err != nil {
			return fmt.Errorf("end sessions: %w", err)
		}
	}
	fmt.Fprintf(stdout, "password set for %s (account %s)\n", *email, acct.ID)
	return nil
}
