package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/validmail/validmail/store"
	"github.com/validmail/validmail/store/backend"
)

func inviteHash() string { return store.HashSecret("invite-" + uuid.NewString()) }

// testTeam: an invitation is accepted once, makes a member with its
// role and password, and not after it expired; member emails are unique
// across accounts; removal; the bound on members.
func testTeam(t *testing.T, b *backend.Backend) {
	if b.Team == nil {
		t.Skip("backend keeps no teams")
	}
	ctx := context.Background()
	tm := b.Team
	a := mustAccount(t, b, store.CreateAccountParams{})
	other := mustAccount(t, b, store.CreateAccountParams{})
	hour := time.Now().Add(time.Hour)

	teamInviteRefusals(ctx, t, tm, a, hour)
	mail := "Member-" + uuid.NewString() + "@Example.org"
	m := teamAcceptOnce(ctx, t, tm, a, other, mail, hour)
	teamAcceptRefusals(ctx, t, tm, a, other, mail, hour)
	teamMembers(ctx, t, tm, a, other, m, hour)
	teamRemoval(ctx, t, tm, a, other, m, mail, hour)
	teamBound(ctx, t, b, hour)
}

// teamInviteRefusals: an invitation to an unknown account is
// ErrNotFound, one with the owner's role or no known role
// ErrInvalidRole.
func teamInviteRefusals(ctx context.Context, t *testing.T, tm store.Team, a store.Account, hour time.Time) {
	if err := tm.Invite(ctx, store.Invitation{Hash: inviteHash(), AccountID: uuid.NewString(), Email: email(), Role: store.RoleMember, Expiry: hour}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Invite to an unknown account: %v", err)
	}
	for _, r := range []store.Role{store.RoleOwner, "", "root"} {
		if err := tm.Invite(ctx, store.Invitation{Hash: inviteHash(), AccountID: a.ID, Email: email(), Role: r, Expiry: hour}); !errors.Is(err, store.ErrInvalidRole) {
			t.Errorf("Invite with role %q: %v", r, err)
		}
	}
}

// teamAcceptOnce: of four accepts at once of one invitation of mail to
// a, one makes the member (returned), found by its account only
// and by its email in any case.
func teamAcceptOnce(ctx context.Context, t *testing.T, tm store.Team, a, other store.Account, mail string, hour time.Time) store.Member {
	h := inviteHash()
	if err := tm.Invite(ctx, store.Invitation{Hash: h, AccountID: a.ID, Email: mail, Role: store.RoleAdmin, Expiry: hour}); err != nil {
		t.Fatal(err)
	}
	// Two accept at once: one member.
	var wg sync.WaitGroup
	results := make([]error, 4)
	members := make([]store.Member, 4)
	for i := range results {
		wg.Go(func() { members[i], results[i] = tm.AcceptInvitation(ctx, h, "hash-1") })
	}
	wg.Wait()
	var m store.Member
	won := 0
	for i, err := range results {
		switch {
		case err == nil:
			won++
			m = members[i]
		case !errors.Is(err, store.ErrTokenInvalid):
			t.Errorf("accept %d: %v", i, err)
		}
	}
	if won != 1 {
		t.Fatalf("%d accepts of one invitation succeeded, want 1", won)
	}
	if m.ID == "" || m.AccountID != a.ID || m.Email != mail || m.Role != store.RoleAdmin || m.PasswordHash != "hash-1" || m.CreatedAt.IsZero() {
		t.Errorf("member: %+v", m)
	}
	got, err := tm.Member(ctx, a.ID, m.ID)
	if err != nil || got.ID != m.ID || got.Email != mail || got.Role != store.RoleAdmin || got.PasswordHash != "hash-1" {
		t.Errorf("Member: %+v, %v", got, err)
	}
	if _, err := tm.Member(ctx, other.ID, m.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Member of another account: %v", err)
	}
	if got, err := tm.MemberByEmail(ctx, strings.ToLower(mail)); err != nil || got.ID != m.ID {
		t.Errorf("MemberByEmail: %+v, %v", got, err)
	}
	if _, err := tm.MemberByEmail(ctx, email()); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("MemberByEmail(unknown): %v", err)
	}
	return m
}

// teamAcceptRefusals: an invitation of another account's member's mail
// is used up by its refusal (ErrEmailTaken, then ErrTokenInvalid); an
// expired or unknown invitation is ErrTokenInvalid.
func teamAcceptRefusals(ctx context.Context, t *testing.T, tm store.Team, a, other store.Account, mail string, hour time.Time) {
	// The same email invited by another account: the invitation is used
	// up, the email stays the first account's member.
	h2 := inviteHash()
	if err := tm.Invite(ctx, store.Invitation{Hash: h2, AccountID: other.ID, Email: strings.ToUpper(mail), Role: store.RoleMember, Expiry: hour}); err != nil {
		t.Fatal(err)
	}
	if _, err := tm.AcceptInvitation(ctx, h2, "hash-2"); !errors.Is(err, store.ErrEmailTaken) {
		t.Errorf("accept of a member's email: %v", err)
	}
	if _, err := tm.AcceptInvitation(ctx, h2, "hash-2"); !errors.Is(err, store.ErrTokenInvalid) {
		t.Errorf("second accept after ErrEmailTaken: %v", err)
	}
	// Expired, unknown.
	h3 := inviteHash()
	if err := tm.Invite(ctx, store.Invitation{Hash: h3, AccountID: a.ID, Email: email(), Role: store.RoleMember, Expiry: time.Now().Add(-time.Second)}); err != nil {
		t.Fatal(err)
	}
	if _, err := tm.AcceptInvitation(ctx, h3, "x"); !errors.Is(err, store.ErrTokenInvalid) {
		t.Errorf("expired invitation: %v", err)
	}
	if _, err := tm.AcceptInvitation(ctx, inviteHash(), "x"); !errors.Is(err, store.ErrTokenInvalid) {
		t.Errorf("unknown invitation: %v", err)
	}
}

// teamMembers: with a second member beside m, the account's list holds
// both, oldest first, and another account's none.
func teamMembers(ctx context.Context, t *testing.T, tm store.Team, a, other store.Account, m store.Member, hour time.Time) {
	// A second member; the list is oldest first and the account's only.
	h4 := inviteHash()
	if err := tm.Invite(ctx, store.Invitation{Hash: h4, AccountID: a.ID, Email: email(), Role: store.RoleMember, Expiry: hour}); err != nil {
		t.Fatal(err)
	}
	m2, err := tm.AcceptInvitation(ctx, h4, "hash-4")
	if err != nil {
		t.Fatal(err)
	}
	list, err := tm.Members(ctx, a.ID)
	if err != nil || len(list) != 2 || list[0].ID != m.ID || list[1].ID != m2.ID || list[1].Role != store.RoleMember {
		t.Errorf("Members: %+v, %v", list, err)
	}
	if list, err := tm.Members(ctx, other.ID); err != nil || len(list) != 0 {
		t.Errorf("Members of an account without any: %+v, %v", list, err)
	}
}

// teamRemoval: only m's own account removes it, once; then it is gone
// and its email (mail) can join another account.
func teamRemoval(ctx context.Context, t *testing.T, tm store.Team, a, other store.Account, m store.Member, mail string, hour time.Time) {
	// Removal frees the email.
	if err := tm.RemoveMember(ctx, other.ID, m.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("RemoveMember by another account: %v", err)
	}
	if err := tm.RemoveMember(ctx, a.ID, m.ID); err != nil {
		t.Fatal(err)
	}
	if err := tm.RemoveMember(ctx, a.ID, m.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("RemoveMember twice: %v", err)
	}
	if _, err := tm.Member(ctx, a.ID, m.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Member after removal: %v", err)
	}
	if _, err := tm.MemberByEmail(ctx, mail); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("MemberByEmail after removal: %v", err)
	}
	h5 := inviteHash()
	if err := tm.Invite(ctx, store.Invitation{Hash: h5, AccountID: other.ID, Email: mail, Role: store.RoleMember, Expiry: hour}); err != nil {
		t.Fatal(err)
	}
	if m5, err := tm.AcceptInvitation(ctx, h5, "hash-5"); err != nil || m5.AccountID != other.ID {
		t.Errorf("accept after removal: %+v, %v", m5, err)
	}
}

// teamBound: an account takes MaxMembers members, and the next accept is
// ErrTeamFull.
func teamBound(ctx context.Context, t *testing.T, b *backend.Backend, hour time.Time) {
	tm := b.Team
	// The bound.
	full := mustAccount(t, b, store.CreateAccountParams{})
	for i := range store.MaxMembers + 1 {
		h := inviteHash()
		if err := tm.Invite(ctx, store.Invitation{Hash: h, AccountID: full.ID, Email: fmt.Sprintf("m%d-%s@example.org", i, uuid.NewString()), Role: store.RoleMember, Expiry: hour}); err != nil {
			t.Fatal(err)
		}
		_, err := tm.AcceptInvitation(ctx, h, "h")
		if i < store.MaxMembers && err != nil {
			t.Fatalf("member %d: %v", i, err)
		}
		if i == store.MaxMembers && !errors.Is(err, store.ErrTeamFull) {
			t.Errorf("member beyond MaxMembers: %v", err)
		}
	}
}

// testAudit: entries come back newest first, paged, per account, cut to
// their bounds, and only the newest MaxAuditEntries are kept.
func testAudit(t *testing.T, b *backend.Backend) {
	if b.Audit == nil {
		t.Skip("backend keeps no audit log")
	}
	ctx := context.Background()
	al := b.Audit
	a, other := uuid.NewString(), uuid.NewString()
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	n := store.MaxAuditEntries + 5
	for i := range n {
		e := store.AuditEntry{AccountID: a, Time: base.Add(time.Duration(i) * time.Second), Actor: "owner o@example.org",
			Action: "key.created", Detail: fmt.Sprint(i)}
		if err := al.AddAudit(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	if err := al.AddAudit(ctx, store.AuditEntry{AccountID: other, Actor: strings.Repeat("é", 400), Action: "webhook.deleted", Detail: strings.Repeat("x", 2000)}); err != nil {
		t.Fatal(err)
	}
	first, err := al.Audit(ctx, a, 0, 3)
	if err != nil || len(first) != 3 {
		t.Fatalf("first page: %+v, %v", first, err)
	}
	for i, e := range first {
		want := fmt.Sprint(n - 1 - i)
		if e.Detail != want || e.AccountID != a || e.Action != "key.created" || e.Actor != "owner o@example.org" ||
			!e.Time.Equal(base.Add(time.Duration(n-1-i)*time.Second)) {
			t.Errorf("entry %d: %+v, want detail %s", i, e, want)
		}
	}
	next, err := al.Audit(ctx, a, 3, 2)
	if err != nil || len(next) != 2 || next[0].Detail != fmt.Sprint(n-4) {
		t.Errorf("second page: %+v, %v", next, err)
	}
	tail, err := al.Audit(ctx, a, store.MaxAuditEntries-2, 10)
	if err != nil || len(tail) != 2 || tail[1].Detail != fmt.Sprint(n-store.MaxAuditEntries) {
		t.Errorf("oldest kept entries: %+v, %v (want the last to be %d)", tail, err, n-store.MaxAuditEntries)
	}
	o, err := al.Audit(ctx, other, 0, 10)
	if err != nil || len(o) != 1 {
		t.Fatalf("other account: %+v, %v", o, err)
	}
	if len(o[0].Actor) > store.MaxAuditActorBytes || len(o[0].Detail) != store.MaxAuditDetailBytes || !strings.HasPrefix(o[0].Actor, "éé") || o[0].Time.IsZero() {
		t.Errorf("long entry kept as actor %d bytes, detail %d bytes, time %v", len(o[0].Actor), len(o[0].Detail), o[0].Time)
	}
	if e, err := al.Audit(ctx, uuid.NewString(), 0, 10); err != nil || len(e) != 0 {
		t.Errorf("unknown account: %+v, %v", e, err)
	}
}
