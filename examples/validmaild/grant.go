package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/validmail/validmail/httpapi/service"
	"github.com/validmail/validmail/store/backend"
)

// accountUsage lists the account subcommands.
const accountUsage = `Usage: validmaild account create -email E -store URL
       validmaild account set-password -email E -store URL < password
       validmaild account grant -email E -credits N -reason R [-key K] -store URL
       validmaild account show -email E -store URL
       validmaild account set-plan -email E -plan P [-plans FILE] -store URL`

// ledgerEntry is a ledger entry as the account commands print it.
type ledgerEntry struct {
	ID        string `json:"id"`
	Delta     int64  `json:"delta"`
	Reason    string `json:"reason"`
	Reference string `json:"reference"`
	CreatedAt string `json:"created_at"`
}

// parseAccountFlags parses an account command's flags, -store also from
// the environment; ok reports whether every required flag is set.
func parseAccountFlags(fs *flag.FlagSet, args []string, getenv func(string) string, need string, ok func() bool) error {
	if err := parseFlags(fs, args, func(name string) string {
		if name == envName("store") {
			return getenv(name)
		}
		return ""
	}); err != nil {
		return err
	}
	if fs.NArg() > 0 || !ok() {
		fs.Usage()
		return fmt.Errorf("%w: %s", errUsage, need)
	}
	return nil
}

// openShared opens the shared store of an account command.
func openShared(ctx context.Context, storeURL string) (*backend.Backend, error) {
	b, err := openBackend(ctx, storeURL, 0, false, false, slog.New(slog.DiscardHandler))
	if err != nil {
		return nil, err
	}
	if !b.Shared {
		b.Close()
		return nil, fmt.Errorf("%w: %w", errUsage, errNotShared)
	}
	return b, nil
}

// runGrant runs "validmaild account grant": credits added to an account
// as one ledger entry whose reference is the reason.
func runGrant(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := newFlagSet("validmaild account grant", stderr)
	email := fs.String("email", "", "the account's `email` (required)")
	amount := fs.Int64("credits", 0, "`credits` to add, 1 to 1000000000 (required)")
	reason := fs.String("reason", "", "`why`, as the account's credit history shows it: an invoice, a gift (required)")
	key := fs.String("key", "", "an idempotency `key`, such as a payment's id: a grant repeated with it applies once")
	storeURL := fs.String("store", "", "the shared store: postgres://… or redis://… (required)")
	if err := parseAccountFlags(fs, args, getenv, "account grant needs -email, -credits (1 to 1000000000), -reason and -store", func() bool {
		return *email != "" && *amount >= 1 && *amount <= 1_000_000_000 && *reason != "" && *storeURL != ""
	}); err != nil {
		return err
	}
	b, err := openShared(ctx, *storeURL)
	if err != nil {
		return err
	}
	defer b.Close()
	g, err := service.GrantCredits(ctx, b, service.GrantParams{Email: *email, Credits: *amount, Reason: *reason, IdempotencyKey: *key})
	switch {
	case errors.Is(err, service.ErrNoAccount):
		return fmt.Errorf("no account has the email %q", *email)
	case errors.Is(err, service.ErrInvalidGrant):
		return fmt.Errorf("%w: %v", errUsage, err)
	case err != nil:
		return err
	}
	return json.NewEncoder(stdout).Encode(struct {
		AccountID string      `json:"account_id"`
		Entry     ledgerEntry `json:"entry"`
		Replayed  bool        `json:"replayed"`
		Balance   int64       `json:"balance"`
	}{g.AccountID, entryOf(g.Entry.ID, g.Entry.Delta, string(g.Entry.Reason), g.Entry.Reference, g.Entry.Time), g.Entry.Replayed, g.Balance})
}

// runShow runs "validmaild account show": the account, its balance,
// where its credits came from, and its newest ledger entries.
func runShow(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := newFlagSet("validmaild account show", stderr)
	email := fs.String("email", "", "the account's `email` (required)")
	storeURL := fs.String("store", "", "the shared store: postgres://… or redis://… (required)")
	if err := parseAccountFlags(fs, args, getenv, "account show needs -email and -store", func() bool {
		return *email != "" && *storeURL != ""
	}); err != nil {
		return err
	}
	b, err := openShared(ctx, *storeURL)
	if err != nil {
		return err
	}
	defer b.Close()
	s, err := service.ShowAccount(ctx, b, *email, time.Now())
	if errors.Is(err, service.ErrNoAccount) {
		return fmt.Errorf("no account has the email %q", *email)
	}
	if err != nil {
		return err
	}
	type summary struct {
		Signup   int64 `json:"signup"`
		Granted  int64 `json:"granted"`
		Charged  int64 `json:"charged"`
		Refunded int64 `json:"refunded"`
	}
	recent := make([]ledgerEntry, 0, len(s.Recent))
	for _, e := range s.Recent {
		recent = append(recent, entryOf(e.ID, e.Delta, string(e.Reason), e.Reference, e.Time))
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		AccountID string        `json:"account_id"`
		Email     string        `json:"email"`
		Plan      string        `json:"plan"`
		CreatedAt string        `json:"created_at"`
		Balance   int64         `json:"balance"`
		Credits   summary       `json:"credits"`
		Recent    []ledgerEntry `json:"recent"`
	}{s.Account.ID, s.Account.Email, s.Account.Plan, s.Account.CreatedAt.UTC().Format(time.RFC3339), s.Balance,
		summary{s.Credits.Signup, s.Credits.Granted, s.Credits.Charged, s.Credits.Refunded}, recent})
}

func entryOf(id string, delta int64, reason, ref string, t time.Time) ledgerEntry {
	return ledgerEntry{ID: id, Delta: delta, Reason: reason, Reference: ref, CreatedAt: t.UTC().Format(time.RFC3339)}
}
