package storetest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/validmail/validmail/store"
	"github.com/validmail/validmail/store/backend"
)

// testTeamInvitations: an account's live invitations are listed (not
// another account's, not expired ones) and read by hash; an owner
// revokes one of its own only; removing a member deletes the account's
// other invitations of the member's address (in any case), so that none
// lets it back in, and leaves the rest.
func testTeamInvitations(t *testing.T, b *backend.Backend) {
	if b.Team == nil {
		t.Skip("backend keeps no teams")
	}
	ctx := context.Background()
	tm := b.Team
	a := mustAccount(t, b, store.CreateAccountParams{})
	other := mustAccount(t, b, store.CreateAccountParams{})
	now := time.Now()
	mail := "Again-" + uuid.NewString() + "@Example.org"
	invite := func(account, email string, expiry time.Time) string {
		t.Helper()
		h := inviteHash()
		if err := tm.Invite(ctx, store.Invitation{Hash: h, AccountID: account, Email: email, Role: store.RoleMember, Expiry: expiry}); err != nil {
			t.Fatal(err)
		}
		return h
	}
	first := invite(a.ID, mail, now.Add(time.Hour))
	second := invite(a.ID, strings.ToUpper(mail), now.Add(3*time.Hour))
	elsewhere := invite(other.ID, mail, now.Add(time.Hour))
	keep := invite(a.ID, "keep-"+uuid.NewString()+"@example.org", now.Add(2*time.Hour))
	invite(a.ID, "gone-"+uuid.NewString()+"@example.org", now.Add(-time.Second))

	list := func(account string) []string {
		t.Helper()
		invs, err := tm.Invitations(ctx, account)
		if err != nil {
			t.Fatal(err)
		}
		var hs []string
		for _, inv := range invs {
			if inv.AccountID != account || inv.Role != store.RoleMember || inv.Email == "" {
				t.Errorf("invitation %+v", inv)
			}
			hs = append(hs, inv.Hash)
		}
		return hs
	}
	if got := list(a.ID); strings.Join(got, ",") != strings.Join([]string{first, keep, second}, ",") {
		t.Errorf("Invitations = %v, want %v (soonest to expire first)", got, []string{first, keep, second})
	}
	if inv, err := tm.Invitation(ctx, first); err != nil || inv.Email != mail || inv.AccountID != a.ID {
		t.Errorf("Invitation = %+v, %v", inv, err)
	}
	if _, err := tm.Invitation(ctx, inviteHash()); !errors.Is(err, store.ErrTokenInvalid) {
		t.Errorf("Invitation of an unknown hash: %v", err)
	}

	// The first is accepted; removing its member deletes the second, not
	// another account's nor another address's.
	m, err := tm.AcceptInvitation(ctx, first, "h")
	if err != nil {
		t.Fatal(err)
	}
	if err := tm.RemoveMember(ctx, a.ID, m.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := tm.AcceptInvitation(ctx, second, "h"); !errors.Is(err, store.ErrTokenInvalid) {
		t.Errorf("a removed member's second invitation: %v, want ErrTokenInvalid", err)
	}
	if got := list(a.ID); len(got) != 1 || got[0] != keep {
		t.Errorf("Invitations after the removal = %v, want only %s", got, keep)
	}
	if got := list(other.ID); len(got) != 1 || got[0] != elsewhere {
		t.Errorf("another account's invitations = %v", got)
	}

	if err := tm.RevokeInvitation(ctx, other.ID, keep); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("RevokeInvitation by another account: %v", err)
	}
	if err := tm.RevokeInvitation(ctx, a.ID, keep); err != nil {
		t.Fatal(err)
	}
	if err := tm.RevokeInvitation(ctx, a.ID, keep); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("RevokeInvitation twice: %v", err)
	}
	if _, err := tm.AcceptInvitation(ctx, keep, "h"); !errors.Is(err, store.ErrTokenInvalid) {
		t.Errorf("a revoked invitation accepted: %v", err)
	}
	if got := list(a.ID); len(got) != 0 {
		t.Errorf("Invitations after the revocation = %v", got)
	}
}
