package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/validmail/validmail/store"
)

// testPasswords: a hash given at signup is stored with the account,
// replaced, removed; an unknown account is ErrNotFound.
func testPasswords(t *testing.T, b *store.Backend) {
	if b.Passwords == nil {
		t.Skip("backend keeps no passwords")
	}
	ctx := context.Background()
	const h1, h2 = "$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA", "$argon2id$v=19$m=19456,t=2,p=1$c2FsdDI$aGFzaDI"
	a := mustAccount(t, b, store.CreateAccountParams{PasswordHash: h1})
	if got, err := b.Passwords.PasswordHash(ctx, a.ID); err != nil || got != h1 {
		t.Fatalf("hash after signup: %q, %v", got, err)
	}
	if err := b.Passwords.SetPasswordHash(ctx, a.ID, h2); err != nil {
		t.Fatal(err)
	}
	if got, err := b.Passwords.PasswordHash(ctx, a.ID); err != nil || got != h2 {
		t.Fatalf("hash after reset: %q, %v", got, err)
	}
	if err := b.Passwords.SetPasswordHash(ctx, a.ID, ""); err != nil {
		t.Fatal(err)
	}
	if got, err := b.Passwords.PasswordHash(ctx, a.ID); err != nil || got != "" {
		t.Fatalf("hash after removal: %q, %v", got, err)
	}
	other := mustAccount(t, b, store.CreateAccountParams{})
	if got, err := b.Passwords.PasswordHash(ctx, other.ID); err != nil || got != "" {
		t.Fatalf("account created without a password: %q, %v", got, err)
	}
	unknown := uuid.NewString()
	if _, err := b.Passwords.PasswordHash(ctx, unknown); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("PasswordHash(unknown): %v", err)
	}
	if err := b.Passwords.SetPasswordHash(ctx, unknown, h1); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("SetPasswordHash(unknown): %v", err)
	}
}

// testSessions: commit, find, replace, delete, expiry.
func testSessions(t *testing.T, b *store.Backend) {
	if b.Sessions == nil {
		t.Skip("backend keeps no sessions")
	}
	ctx := context.Background()
	tok := "tok-" + uuid.NewString()
	if _, found, err := b.Sessions.FindCtx(ctx, tok); found || err != nil {
		t.Fatalf("unknown token: found %v, %v", found, err)
	}
	if err := b.Sessions.CommitCtx(ctx, tok, []byte("one"), time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if got, found, err := b.Sessions.FindCtx(ctx, tok); !found || err != nil || string(got) != "one" {
		t.Fatalf("after commit: %q, %v, %v", got, found, err)
	}
	if err := b.Sessions.Commit(tok, []byte("two"), time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if got, found, err := b.Sessions.Find(tok); !found || err != nil || string(got) != "two" {
		t.Fatalf("after replace: %q, %v, %v", got, found, err)
	}
	if err := b.Sessions.Delete(tok); err != nil {
		t.Fatal(err)
	}
	if _, found, err := b.Sessions.FindCtx(ctx, tok); found || err != nil {
		t.Fatalf("after delete: found %v, %v", found, err)
	}
	if err := b.Sessions.DeleteCtx(ctx, tok); err != nil {
		t.Fatalf("deleting a deleted token: %v", err)
	}
	short := "tok-" + uuid.NewString()
	if err := b.Sessions.CommitCtx(ctx, short, []byte("x"), time.Now().Add(300*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(600 * time.Millisecond)
	if _, found, err := b.Sessions.FindCtx(ctx, short); found || err != nil {
		t.Fatalf("expired session: found %v, %v", found, err)
	}
}

// testUsage: counts add up by month and status, per account.
func testUsage(t *testing.T, b *store.Backend) {
	if b.Usage == nil {
		t.Skip("backend keeps no usage counts")
	}
	ctx := context.Background()
	acct, other := uuid.NewString(), uuid.NewString()
	nov := time.Date(2026, 11, 24, 23, 59, 0, 0, time.UTC)
	dec := time.Date(2026, 12, 1, 0, 0, 1, 0, time.UTC)
	for _, c := range []struct {
		acct   string
		at     time.Time
		status string
		n      int
	}{{acct, nov, "LIKELY", 1}, {acct, nov, "LIKELY", 2}, {acct, nov, "INVALID_DOMAIN", 1}, {acct, dec, "LIKELY", 5}, {other, nov, "LIKELY", 7}} {
		if err := b.Usage.AddUsage(ctx, c.acct, c.at, c.status, c.n); err != nil {
			t.Fatal(err)
		}
	}
	got, err := b.Usage.MonthUsage(ctx, acct, nov.Add(-20*24*time.Hour))
	if err != nil || len(got) != 2 || got["LIKELY"] != 3 || got["INVALID_DOMAIN"] != 1 {
		t.Fatalf("November: %v, %v", got, err)
	}
	if got, err := b.Usage.MonthUsage(ctx, acct, dec); err != nil || len(got) != 1 || got["LIKELY"] != 5 {
		t.Fatalf("December: %v, %v", got, err)
	}
	if got, err := b.Usage.MonthUsage(ctx, uuid.NewString(), nov); err != nil || got == nil || len(got) != 0 {
		t.Fatalf("an account without usage: %v, %v", got, err)
	}
}
