package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/validmail/validmail/store"
	"github.com/validmail/validmail/store/backend"
)

// testPasswords: a hash given at signup is stored with the account,
// replaced, removed; an unknown account is ErrNotFound.
func testPasswords(t *testing.T, b *backend.Backend) {
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

// testSessions: save, find, replace, delete, expiry; ending an
// account's sessions but one leaves other accounts' and anonymous ones.
func testSessions(t *testing.T, b *backend.Backend) {
	if b.Sessions == nil {
		t.Skip("backend keeps no sessions")
	}
	ctx := context.Background()
	hour := time.Now().Add(time.Hour)
	acct := uuid.NewString()
	sessionLifecycle(ctx, t, b.Sessions, acct, hour)
	sessionExpiry(ctx, t, b.Sessions, acct, hour)
	accountSessionsEnd(ctx, t, b.Sessions, acct, hour)
}

// newSessionID returns the hash of a new session token.
func newSessionID() string { return store.HashSecret("tok-" + uuid.NewString()) }

// sessionLifecycle: a session of acct is not found before its save,
// found after it, replaced by a save or an update, and gone after its
// deletion (a second deletion is no error), even after an update; a
// malformed id is not found.
func sessionLifecycle(ctx context.Context, t *testing.T, ss store.SessionStore, acct string, hour time.Time) {
	s1 := newSessionID()
	if _, found, err := ss.FindSession(ctx, s1); found || err != nil {
		t.Fatalf("unknown id: found %v, %v", found, err)
	}
	if err := ss.SaveSession(ctx, store.Session{ID: s1, AccountID: acct, Data: []byte("one"), Expiry: hour}); err != nil {
		t.Fatal(err)
	}
	if got, found, err := ss.FindSession(ctx, s1); !found || err != nil || string(got) != "one" {
		t.Fatalf("after save: %q, %v, %v", got, found, err)
	}
	if err := ss.SaveSession(ctx, store.Session{ID: s1, AccountID: acct, Data: []byte("two"), Expiry: hour}); err != nil {
		t.Fatal(err)
	}
	if got, found, err := ss.FindSession(ctx, s1); !found || err != nil || string(got) != "two" {
		t.Fatalf("after replace: %q, %v, %v", got, found, err)
	}
	if err := ss.UpdateSession(ctx, store.Session{ID: s1, AccountID: acct, Data: []byte("three"), Expiry: hour}); err != nil {
		t.Fatal(err)
	}
	if got, found, err := ss.FindSession(ctx, s1); !found || err != nil || string(got) != "three" {
		t.Fatalf("after update: %q, %v, %v", got, found, err)
	}
	if err := ss.DeleteSession(ctx, s1); err != nil {
		t.Fatal(err)
	}
	if _, found, err := ss.FindSession(ctx, s1); found || err != nil {
		t.Fatalf("after delete: found %v, %v", found, err)
	}
	if err := ss.DeleteSession(ctx, s1); err != nil {
		t.Fatalf("deleting a deleted session: %v", err)
	}
	// An update cannot bring an ended session back.
	if err := ss.UpdateSession(ctx, store.Session{ID: s1, AccountID: acct, Data: []byte("back"), Expiry: hour}); err != nil {
		t.Fatal(err)
	}
	if _, found, err := ss.FindSession(ctx, s1); found || err != nil {
		t.Fatalf("an ended session after an update: found %v, %v", found, err)
	}
	if _, found, err := ss.FindSession(ctx, "not a hash"); found || err != nil {
		t.Fatalf("a malformed id: found %v, %v", found, err)
	}
}

// sessionExpiry: a save with an expiry past deletes the session; a
// short session ends by itself.
func sessionExpiry(ctx context.Context, t *testing.T, ss store.SessionStore, acct string, hour time.Time) {
	past := newSessionID()
	if err := ss.SaveSession(ctx, store.Session{ID: past, AccountID: acct, Data: []byte("x"), Expiry: hour}); err != nil {
		t.Fatal(err)
	}
	if err := ss.SaveSession(ctx, store.Session{ID: past, AccountID: acct, Data: []byte("x"), Expiry: time.Now().Add(-time.Second)}); err != nil {
		t.Fatal(err)
	}
	if _, found, err := ss.FindSession(ctx, past); found || err != nil {
		t.Fatalf("saved with a past expiry: found %v, %v", found, err)
	}
	short := newSessionID()
	if err := ss.SaveSession(ctx, store.Session{ID: short, Data: []byte("x"), Expiry: time.Now().Add(200 * time.Millisecond)}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		_, found, err := ss.FindSession(ctx, short)
		if err != nil {
			t.Fatal(err)
		}
		if !found {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a session past its expiry is still found after 30 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// accountSessionsEnd: ending acct's sessions but one leaves that one,
// other accounts' and anonymous ones; ending them all leaves none, and
// an update does not bring them back; account "" ends no anonymous
// session.
func accountSessionsEnd(ctx context.Context, t *testing.T, ss store.SessionStore, acct string, hour time.Time) {
	var mine []string
	for range maxSessionsChecked {
		s := newSessionID()
		mine = append(mine, s)
		if err := ss.SaveSession(ctx, store.Session{ID: s, AccountID: acct, Data: []byte("m"), Expiry: hour}); err != nil {
			t.Fatal(err)
		}
	}
	other, anon := newSessionID(), newSessionID()
	if err := ss.SaveSession(ctx, store.Session{ID: other, AccountID: uuid.NewString(), Data: []byte("o"), Expiry: hour}); err != nil {
		t.Fatal(err)
	}
	if err := ss.SaveSession(ctx, store.Session{ID: anon, Data: []byte("a"), Expiry: hour}); err != nil {
		t.Fatal(err)
	}
	keep := mine[len(mine)/2]
	if err := ss.DeleteAccountSessions(ctx, acct, keep); err != nil {
		t.Fatal(err)
	}
	for _, s := range mine {
		_, found, err := ss.FindSession(ctx, s)
		if err != nil || found != (s == keep) {
			t.Fatalf("after ending the account's other sessions: %s found %v (kept %v), %v", s, found, s == keep, err)
		}
	}
	for _, s := range []string{other, anon} {
		if _, found, err := ss.FindSession(ctx, s); !found || err != nil {
			t.Fatalf("another account's or an anonymous session: found %v, %v", found, err)
		}
	}
	if err := ss.DeleteAccountSessions(ctx, acct, ""); err != nil {
		t.Fatal(err)
	}
	if _, found, err := ss.FindSession(ctx, keep); found || err != nil {
		t.Fatalf("after ending every session of the account: found %v, %v", found, err)
	}
	for _, s := range mine {
		if err := ss.UpdateSession(ctx, store.Session{ID: s, AccountID: acct, Data: []byte("again"), Expiry: hour}); err != nil {
			t.Fatal(err)
		}
		if _, found, err := ss.FindSession(ctx, s); found || err != nil {
			t.Fatalf("an ended session of the account after an update: found %v, %v", found, err)
		}
	}
	if err := ss.DeleteAccountSessions(ctx, uuid.NewString(), ""); err != nil {
		t.Fatalf("an account without sessions: %v", err)
	}
	// "" is no account: anonymous sessions are never ended by account.
	if err := ss.DeleteAccountSessions(ctx, "", ""); err != nil {
		t.Fatal(err)
	}
	if _, found, err := ss.FindSession(ctx, anon); !found || err != nil {
		t.Fatalf("an anonymous session after ending account \"\": found %v, %v", found, err)
	}
}

// maxSessionsChecked is how many sessions of one account testSessions
// ends at once: more than a backend's set is allowed before pruning.
const maxSessionsChecked = 40

// testTokens: a token is taken once, by its purpose only, never after
// its expiry; an unknown account has none.
func testTokens(t *testing.T, b *backend.Backend) {
	if b.Tokens == nil {
		t.Skip("backend keeps no tokens")
	}
	ctx := context.Background()
	a := mustAccount(t, b, store.CreateAccountParams{})
	hash := store.HashSecret("tok-" + uuid.NewString())
	exp := time.Now().Add(time.Hour).Truncate(time.Millisecond)
	if _, err := b.Tokens.TakeToken(ctx, store.TokenReset, hash); !errors.Is(err, store.ErrTokenInvalid) {
		t.Fatalf("an unknown token: %v", err)
	}
	if err := b.Tokens.CreateToken(ctx, store.Token{Hash: hash, Purpose: store.TokenReset, AccountID: a.ID, Expiry: exp}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Tokens.TakeToken(ctx, store.TokenConfirm, hash); !errors.Is(err, store.ErrTokenInvalid) {
		t.Fatalf("a token of another purpose: %v", err)
	}
	got, err := b.Tokens.TakeToken(ctx, store.TokenReset, hash)
	if err != nil || got.AccountID != a.ID || got.Purpose != store.TokenReset || got.Hash != hash || !got.Expiry.Equal(exp) {
		t.Fatalf("TakeToken: %+v, %v; want account %s, expiry %v", got, err, a.ID, exp)
	}
	if _, err := b.Tokens.TakeToken(ctx, store.TokenReset, hash); !errors.Is(err, store.ErrTokenInvalid) {
		t.Fatalf("a used token: %v", err)
	}

	expired := store.HashSecret("tok-" + uuid.NewString())
	if err := b.Tokens.CreateToken(ctx, store.Token{Hash: expired, Purpose: store.TokenConfirm, AccountID: a.ID, Expiry: time.Now().Add(-time.Second)}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Tokens.TakeToken(ctx, store.TokenConfirm, expired); !errors.Is(err, store.ErrTokenInvalid) {
		t.Fatalf("an expired token: %v", err)
	}
	if err := b.Tokens.CreateToken(ctx, store.Token{Hash: store.HashSecret("x" + uuid.NewString()), Purpose: store.TokenConfirm, AccountID: uuid.NewString(), Expiry: exp}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a token of an unknown account: %v", err)
	}
	if _, err := b.Tokens.TakeToken(ctx, store.TokenConfirm, "short"); !errors.Is(err, store.ErrTokenInvalid) {
		t.Fatalf("a malformed hash: %v", err)
	}

	// Taken at once by many: exactly one wins.
	race := store.HashSecret("tok-" + uuid.NewString())
	if err := b.Tokens.CreateToken(ctx, store.Token{Hash: race, Purpose: store.TokenConfirm, AccountID: a.ID, Expiry: exp}); err != nil {
		t.Fatal(err)
	}
	const n = 8
	errs := make(chan error, n)
	for range n {
		go func() {
			_, err := b.Tokens.TakeToken(ctx, store.TokenConfirm, race)
			errs <- err
		}()
	}
	won := 0
	for range n {
		switch err := <-errs; {
		case err == nil:
			won++
		case !errors.Is(err, store.ErrTokenInvalid):
			t.Fatal(err)
		}
	}
	if won != 1 {
		t.Fatalf("%d of %d concurrent takes got the token, want 1", won, n)
	}
}

// testConfirm: an unconfirmed account holds its grant until confirmed,
// once; a confirmed account is left alone.
func testConfirm(t *testing.T, b *backend.Backend) {
	ctx := context.Background()
	a := mustAccount(t, b, store.CreateAccountParams{Unconfirmed: true, SignupCredits: 120})
	if !a.Unconfirmed {
		t.Fatal("CreateAccount(Unconfirmed) returned a confirmed account")
	}
	if got, err := b.Accounts.GetAccount(ctx, a.ID); err != nil || !got.Unconfirmed {
		t.Fatalf("GetAccount: %+v, %v; want unconfirmed", got, err)
	}
	if got, err := b.Accounts.GetAccountByEmail(ctx, a.Email); err != nil || !got.Unconfirmed {
		t.Fatalf("GetAccountByEmail: %+v, %v; want unconfirmed", got, err)
	}
	if bal, err := b.Credits.Balance(ctx, a.ID); err != nil || bal != 0 {
		t.Fatalf("balance before confirmation: %d, %v", bal, err)
	}
	// Confirmed by several at once: the grant is written once.
	const n = 4
	granted := make(chan int64, n)
	for range n {
		go func() {
			g, err := b.Accounts.ConfirmAccount(ctx, a.ID)
			if err != nil {
				t.Error(err)
			}
			granted <- g
		}()
	}
	var total int64
	for range n {
		total += <-granted
	}
	if total != 120 {
		t.Fatalf("concurrent confirmations granted %d in all, want 120", total)
	}
	if bal, err := b.Credits.Balance(ctx, a.ID); err != nil || bal != 120 {
		t.Fatalf("balance after confirmation: %d, %v", bal, err)
	}
	if got, err := b.Accounts.GetAccount(ctx, a.ID); err != nil || got.Unconfirmed {
		t.Fatalf("after confirmation: %+v, %v", got, err)
	}

	c := mustAccount(t, b, store.CreateAccountParams{})
	if c.Unconfirmed {
		t.Fatal("an account created confirmed reports Unconfirmed")
	}
	if g, err := b.Accounts.ConfirmAccount(ctx, c.ID); err != nil || g != 0 {
		t.Fatalf("confirming a confirmed account: %d, %v", g, err)
	}
	if bal, _ := b.Credits.Balance(ctx, c.ID); bal != store.DefaultSignupCredits {
		t.Fatalf("a confirmed account's balance: %d", bal)
	}
	none := mustAccount(t, b, store.CreateAccountParams{Unconfirmed: true, SignupCredits: -1})
	if g, err := b.Accounts.ConfirmAccount(ctx, none.ID); err != nil || g != 0 {
		t.Fatalf("confirming an account without a grant: %d, %v", g, err)
	}
	if got, err := b.Accounts.GetAccount(ctx, none.ID); err != nil || got.Unconfirmed {
		t.Fatalf("an account without a grant after confirmation: %+v, %v", got, err)
	}
	if _, err := b.Accounts.ConfirmAccount(ctx, uuid.NewString()); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("confirming an unknown account: %v", err)
	}
}

// testUsage: counts add up by month and status, per account.
func testUsage(t *testing.T, b *backend.Backend) {
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
