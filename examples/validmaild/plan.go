package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/validmail/validmail/plans"
	"github.com/validmail/validmail/store"
)

// readPlans reads the plans file named path (-plans); an empty path is no
// catalog.
func readPlans(path string) (*plans.Catalog, error) {
	if path == "" {
		return nil, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: -plans: %v", errUsage, err)
	}
	defer f.Close()
	c, err := plans.Parse(f)
	if err != nil {
		return nil, fmt.Errorf("%w: -plans %s: %v", errUsage, path, err)
	}
	return c, nil
}

// runSetPlan runs "validmaild account set-plan": the account's plan, in
// the store every instance reads. With -plans the name must be one of
// the file's.
func runSetPlan(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := newFlagSet("validmaild account set-plan", stderr)
	email := fs.String("email", "", "the account's `email` (required)")
	plan := fs.String("plan", "", "the plan's `name` (required)")
	file := fs.String("plans", "", "the plans `file` the service reads (-plans): the name must be one of its plans")
	storeURL := fs.String("store", "", "the shared store: postgres://… or redis://… (required)")
	if err := parseAccountFlags(fs, args, getenv, "account set-plan needs -email, -plan and -store", func() bool {
		return *email != "" && *plan != "" && *storeURL != ""
	}); err != nil {
		return err
	}
	if err := store.CheckPlan(*plan); err != nil {
		return fmt.Errorf("%w: -plan: %v", errUsage, err)
	}
	catalog, err := readPlans(*file)
	if err != nil {
		return err
	}
	if catalog != nil {
		if _, err := catalog.Get(*plan); err != nil {
			return fmt.Errorf("%w: %v", errUsage, err)
		}
	}
	b, err := openShared(ctx, *storeURL)
	if err != nil {
		return err
	}
	defer b.Close()
	a, err := b.Accounts.GetAccountByEmail(ctx, *email)
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("no account has the email %q", *email)
	}
	if err != nil {
		return err
	}
	ps, ok := b.Accounts.(store.PlanSetter)
	if !ok {
		return fmt.Errorf("the store %s cannot change plans", b.Name)
	}
	if err := ps.SetPlan(ctx, a.ID, *plan); err != nil {
		return fmt.Errorf("set plan: %w", err)
	}
	return json.NewEncoder(stdout).Encode(struct {
		AccountID string `json:"account_id"`
		Email     string `json:"email"`
		Plan      string `json:"plan"`
		Previous  string `json:"previous"`
	}{a.ID, a.Email, *plan, a.Plan})
}
