package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode"

	"github.com/validmail/validmail/store"
)

// keyUsage lists the key subcommands.
const keyUsage = `Usage: validmaild key create -email E -permissions validate,batch,… [-name N] -store URL`

// maxKeyNameBytes bounds a key's name, as the API does.
const maxKeyNameBytes = 100

// runKey runs "validmaild key SUBCOMMAND".
func runKey(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "create" {
		fmt.Fprintln(stderr, keyUsage)
		return fmt.Errorf("%w: want \"key create\"", errUsage)
	}
	fs := newFlagSet("validmaild key create", stderr)
	email := fs.String("email", "", "the `email` of the account that owns the key (required)")
	permList := fs.String("permissions", "", "comma-separated `permissions` of the key (required): "+permNames())
	name := fs.String("name", "operator", "the key's `name`, as the console and GET /api/v1/keys list it")
	storeURL := fs.String("store", "", "the shared store: postgres://…, redis://… or redis+cluster://… (required)")
	if err := parseAccountFlags(fs, args[1:], getenv, "key create needs -email, -permissions and -store", func() bool {
		return *email != "" && *permList != "" && *storeURL != ""
	}); err != nil {
		return err
	}
	perms, err := parsePermissions(*permList)
	if err != nil {
		return fmt.Errorf("%w: -permissions: %v (want some of %s)", errUsage, err, permNames())
	}
	if len(*name) > maxKeyNameBytes || strings.ContainsFunc(*name, unicode.IsControl) {
		return fmt.Errorf("%w: -name: at most %d bytes of text without control characters", errUsage, maxKeyNameBytes)
	}
	b, err := openShared(ctx, *storeURL)
	if err != nil {
		return err
	}
	defer b.Close()
	acct, err := b.Accounts.GetAccountByEmail(ctx, *email)
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("no account has the email %q", *email)
	}
	if err != nil {
		return fmt.Errorf("find account: %w", err)
	}
	k, secret, err := b.Accounts.CreateKey(ctx, store.CreateKeyParams{AccountID: acct.ID, Name: *name, Permissions: perms})
	if err != nil {
		return fmt.Errorf("create key: %w", err)
	}
	return json.NewEncoder(stdout).Encode(struct {
		AccountID   string             `json:"account_id"`
		KeyID       string             `json:"key_id"`
		Permissions []store.Permission `json:"permissions"`
		APIKey      string             `json:"api_key"`
	}{acct.ID, k.ID, k.Permissions, secret})
}

// parsePermissions reads a comma-separated list of permission names,
// each once.
func parsePermissions(list string) ([]store.Permission, error) {
	var perms []store.Permission
	for s := range strings.SplitSeq(list, ",") {
		p, err := store.ParsePermission(strings.TrimSpace(s))
		if err != nil {
			return nil, err
		}
		for _, q := range perms {
			if q == p {
				return nil, fmt.Errorf("%q named twice", s)
			}
		}
		perms = append(perms, p)
	}
	return perms, nil
}

// permNames lists every permission, comma-separated.
func permNames() string {
	var names []string
	for _, p := range store.AllPermissions() {
		names = append(names, string(p))
	}
	return strings.Join(names, ",")
}
