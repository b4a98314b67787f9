// Package storetest defines what a correct [backend.Backend] is. A backend's
// test calls [RunBackend], the one entry point, which runs every suite
// against it: credits (credits/creditstest), jobs (jobs/jobstest), webhooks
// (webhook/webhooktest), accounts ([Run], in this package), the shared
// rate limiter (store/ratelimit/ratelimittest) and, for a
// backend whose data outlives the process, the crash tests that kill a
// worker or a dispatcher mid-batch:
//
//	func TestBackend(t *testing.T) {
//		storetest.RunBackend(t, storetest.Harness{
//			New: func(tb testing.TB) *backend.Backend { return memstore.NewBackend() },
//		})
//	}
//
// [Harness.New] returns a fresh, empty backend that no other call shares.
// Each suite takes a harness of its own, only the part of a backend it
// checks (a [credits.Store], a jobstest.Backend, a webhooktest.Backend);
// RunBackend adapts the backend to each with [Credits], [Jobs] and
// [Webhooks], which a backend's own benchmarks and tests may use too.
package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/store"
	"github.com/validmail/validmail/store/backend"
)

// Dumper is implemented by an Accounts whose data the suite can search:
// Dump returns every byte of data the backend holds for this test (rows,
// keys and values, in any encoding that keeps strings readable). The suite
// searches it for secrets that must not be stored, and skips that check
// for an Accounts without Dump.
type Dumper interface {
	Dump(ctx context.Context) ([]byte, error)
}

// Run checks that backends made by newBackend behave as [store.Accounts]
// promises. Each subtest runs in parallel with its own backend from
// newBackend.
func Run(t *testing.T, newBackend func(tb testing.TB) *backend.Backend) {
	tests := []struct {
		name string
		f    func(t *testing.T, b *backend.Backend)
	}{
		{"CreateAccountGrantsCredits", testCreateAccount},
		{"SignupCreditsOption", testSignupCredits},
		{"EmailUnique", testEmailUnique},
		{"EmailUniqueConcurrent", testEmailUniqueConcurrent},
		{"NotFound", testNotFound},
		{"KeyLifecycle", testKeyLifecycle},
		{"SecretNeverStored", testSecretNotStored},
		{"KeyPermissions", testKeyPermissions},
		{"GivenSecret", testGivenSecret},
		{"KeyLimit", testKeyLimit},
		{"AuthenticateRejects", testAuthenticateRejects},
		{"RevokeOtherAccount", testRevokeOther},
		{"ContextCanceled", testCanceled},
		{"Passwords", testPasswords},
		{"Sessions", testSessions},
		{"Tokens", testTokens},
		{"Confirm", testConfirm},
		{"Usage", testUsage},
		{"SetPlan", testSetPlan},
		{"Team", testTeam},
		{"TeamInvitations", testTeamInvitations},
		{"Audit", testAudit},
		{"TwoFactor", testTwoFactor},
		{"TwoFactorOnce", testTwoFactorOnce},
		{"TwoFactorEnableRace", testTwoFactorEnableRace},
		{"AccountSlots", testAccountSlots},
		{"PoolAccountBound", testPoolAccountBound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.f(t, newBackend(t))
		})
	}
}

func email() string { return "owner-" + uuid.NewString() + "@example.org" }

func mustAccount(t *testing.T, b *backend.Backend, p store.CreateAccountParams) store.Account {
	t.Helper()
	if p.Email == "" {
		p.Email = email()
	}
	a, err := b.Accounts.CreateAccount(context.Background(), p)
	if err != nil {
		t.Fatalf("CreateAccount: %v", err)
	}
	return a
}

func mustKey(t *testing.T, b *backend.Backend, p store.CreateKeyParams) (store.Key, string) {
	t.Helper()
	k, secret, err := b.Accounts.CreateKey(context.Background(), p)
	if err != nil {
		t.Fatalf("CreateKey: %v", err)
	}
	return k, secret
}

func testCreateAccount(t *testing.T, b *backend.Backend) {
	ctx := context.Background()
	before := time.Now().Add(-time.Second)
	e := email()
	a := mustAccount(t, b, store.CreateAccountParams{Email: e})
	if _, err := uuid.Parse(a.ID); err != nil {
		t.Errorf("account id %q is not a UUID", a.ID)
	}
	if a.Email != e || a.Plan != store.DefaultPlan || a.CreatedAt.Before(before) || a.CreatedAt.After(time.Now().Add(time.Second)) {
		t.Errorf("account %+v", a)
	}
	got, err := b.Accounts.GetAccount(ctx, a.ID)
	if err != nil || got.ID != a.ID || got.Email != e || got.Plan != a.Plan || !got.CreatedAt.Equal(a.CreatedAt) {
		t.Errorf("GetAccount = %+v, %v; want %+v", got, err, a)
	}
	got, err = b.Accounts.GetAccountByEmail(ctx, strings.ToUpper(e))
	if err != nil || got.ID != a.ID {
		t.Errorf("GetAccountByEmail(upper case) = %+v, %v", got, err)
	}
	bal, err := b.Credits.Balance(ctx, a.ID)
	if err != nil || bal != store.DefaultSignupCredits {
		t.Fatalf("balance %d, %v; want %d", bal, err, store.DefaultSignupCredits)
	}
	h, err := b.Credits.History(ctx, credits.HistoryParams{AccountID: a.ID})
	if err != nil || len(h) != 1 || h[0].Reason != credits.ReasonSignup || h[0].Delta != store.DefaultSignupCredits {
		t.Fatalf("history %+v, %v; want one signup entry", h, err)
	}
}

func testSignupCredits(t *testing.T, b *backend.Backend) {
	ctx := context.Background()
	for _, tc := range []struct {
		give, want int64
		entries    int
	}{{25, 25, 1}, {-1, 0, 0}, {0, store.DefaultSignupCredits, 1}} {
		a := mustAccount(t, b, store.CreateAccountParams{SignupCredits: tc.give, Plan: "pro"})
		if a.Plan != "pro" {
			t.Errorf("plan %q, want pro", a.Plan)
		}
		bal, err := b.Credits.Balance(ctx, a.ID)
		if err != nil || bal != tc.want {
			t.Errorf("SignupCredits %d: balance %d, %v; want %d", tc.give, bal, err, tc.want)
		}
		h, err := b.Credits.History(ctx, credits.HistoryParams{AccountID: a.ID})
		if err != nil || len(h) != tc.entries {
			t.Errorf("SignupCredits %d: history %+v, %v", tc.give, h, err)
		}
	}
}

func testEmailUnique(t *testing.T, b *backend.Backend) {
	ctx := context.Background()
	e := email()
	a := mustAccount(t, b, store.CreateAccountParams{Email: e})
	for _, dup := range []string{e, strings.ToUpper(e)} {
		if _, err := b.Accounts.CreateAccount(ctx, store.CreateAccountParams{Email: dup}); !errors.Is(err, store.ErrEmailTaken) {
			t.Errorf("CreateAccount(%q) again: %v, want ErrEmailTaken", dup, err)
		}
	}
	if _, err := b.Accounts.CreateAccount(ctx, store.CreateAccountParams{}); !errors.Is(err, store.ErrInvalidEmail) {
		t.Errorf("CreateAccount without email: %v, want ErrInvalidEmail", err)
	}
	if bal, _ := b.Credits.Balance(ctx, a.ID); bal != store.DefaultSignupCredits {
		t.Errorf("balance %d after refused duplicates, want %d", bal, store.DefaultSignupCredits)
	}
}

func testEmailUniqueConcurrent(t *testing.T, b *backend.Backend) {
	e := email()
	var ok, taken atomic.Int64
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			_, err := b.Accounts.CreateAccount(context.Background(), store.CreateAccountParams{Email: e})
			switch {
			case err == nil:
				ok.Add(1)
			case errors.Is(err, store.ErrEmailTaken):
				taken.Add(1)
			default:
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if ok.Load() != 1 || taken.Load() != 19 {
		t.Fatalf("%d created, %d refused; want 1 and 19", ok.Load(), taken.Load())
	}
}

// activeKeys counts the account's unrevoked keys and all of its keys.
func activeKeys(t *testing.T, b *backend.Backend, accountID string) (active, all int) {
	t.Helper()
	ks, err := b.Accounts.ListKeys(context.Background(), accountID)
	if err != nil {
		t.Fatalf("ListKeys: %v", err)
	}
	for _, k := range ks {
		if !k.Revoked() {
			active++
		}
	}
	return active, len(ks)
}

func testKeyLimit(t *testing.T, b *backend.Backend) {
	ctx := context.Background()
	a := mustAccount(t, b, store.CreateAccountParams{})
	const tries, limit = 50, 10
	var ok, refused atomic.Int64
	var wg sync.WaitGroup
	for range tries {
		wg.Go(func() {
			_, _, err := b.Accounts.CreateKey(ctx, store.CreateKeyParams{AccountID: a.ID, MaxActive: limit})
			switch {
			case err == nil:
				ok.Add(1)
			case errors.Is(err, store.ErrKeyLimit):
				refused.Add(1)
			default:
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if ok.Load() != limit || refused.Load() != tries-limit {
		t.Fatalf("%d created, %d refused; want %d and %d", ok.Load(), refused.Load(), limit, tries-limit)
	}
	if active, all := activeKeys(t, b, a.ID); active != limit || all != limit {
		t.Fatalf("%d active keys of %d after the race, want %d of %d", active, all, limit, limit)
	}

	// Revoked keys do not count: revoking three makes room for three.
	ks, err := b.Accounts.ListKeys(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range ks[:3] {
		if err := b.Accounts.RevokeKey(ctx, a.ID, k.ID); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		if _, _, err := b.Accounts.CreateKey(ctx, store.CreateKeyParams{AccountID: a.ID, MaxActive: limit}); err != nil {
			t.Fatalf("key %d after revoking three: %v", i+1, err)
		}
	}
	if _, _, err := b.Accounts.CreateKey(ctx, store.CreateKeyParams{AccountID: a.ID, MaxActive: limit}); !errors.Is(err, store.ErrKeyLimit) {
		t.Fatalf("key beyond the bound after revoking three: %v, want ErrKeyLimit", err)
	}
	if active, all := activeKeys(t, b, a.ID); active != limit || all != limit+3 {
		t.Fatalf("%d active keys of %d, want %d of %d", active, all, limit, limit+3)
	}

	// Zero is no bound; a lower bound than the keys held refuses; another
	// account's keys do not count; an unknown account is not found.
	if _, _, err := b.Accounts.CreateKey(ctx, store.CreateKeyParams{AccountID: a.ID}); err != nil {
		t.Fatalf("key without a bound: %v", err)
	}
	if _, _, err := b.Accounts.CreateKey(ctx, store.CreateKeyParams{AccountID: a.ID, MaxActive: 1}); !errors.Is(err, store.ErrKeyLimit) {
		t.Fatalf("key with a bound below the keys held: %v, want ErrKeyLimit", err)
	}
	other := mustAccount(t, b, store.CreateAccountParams{})
	mustKey(t, b, store.CreateKeyParams{AccountID: other.ID, MaxActive: 1})
	if _, _, err := b.Accounts.CreateKey(ctx, store.CreateKeyParams{AccountID: uuid.NewString(), MaxActive: limit}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("key of an unknown account: %v, want ErrNotFound", err)
	}
}

func testNotFound(t *testing.T, b *backend.Backend) {
	ctx := context.Background()
	if _, err := b.Accounts.GetAccount(ctx, uuid.NewString()); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetAccount(unknown): %v", err)
	}
	if _, err := b.Accounts.GetAccount(ctx, "not-a-uuid"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetAccount(malformed): %v", err)
	}
	if _, err := b.Accounts.GetAccountByEmail(ctx, email()); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetAccountByEmail(unknown): %v", err)
	}
	if _, _, err := b.Accounts.CreateKey(ctx, store.CreateKeyParams{AccountID: uuid.NewString()}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("CreateKey(unknown account): %v", err)
	}
	a := mustAccount(t, b, store.CreateAccountParams{})
	if err := b.Accounts.RevokeKey(ctx, a.ID, uuid.NewString()); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("RevokeKey(unknown key): %v", err)
	}
	if ks, err := b.Accounts.ListKeys(ctx, uuid.NewString()); err != nil || len(ks) != 0 {
		t.Errorf("ListKeys(unknown account) = %v, %v", ks, err)
	}
}

func testKeyLifecycle(t *testing.T, b *backend.Backend) {
	ctx := context.Background()
	a := mustAccount(t, b, store.CreateAccountParams{})
	k, secret := mustKey(t, b, store.CreateKeyParams{AccountID: a.ID, Name: "ci"})
	if err := store.CheckSecret(secret); err != nil {
		t.Fatalf("secret %q: %v", secret, err)
	}
	if k.AccountID != a.ID || k.Name != "ci" || k.Hash != store.HashSecret(secret) || k.Prefix != store.DisplayPrefix(secret) ||
		k.CreatedAt.IsZero() || !k.LastUsedAt.IsZero() || k.Revoked() {
		t.Fatalf("new key %+v", k)
	}
	if _, err := uuid.Parse(k.ID); err != nil {
		t.Errorf("key id %q is not a UUID", k.ID)
	}
	if fmt.Sprint(k.Permissions) != fmt.Sprint(store.SignupPermissions()) {
		t.Errorf("permissions %v, want the signup set %v", k.Permissions, store.SignupPermissions())
	}
	got, err := b.Accounts.Authenticate(ctx, secret)
	if err != nil || got.ID != k.ID || got.AccountID != a.ID || !got.Can(store.PermBatch) || got.Can(store.PermKeys) {
		t.Fatalf("Authenticate = %+v, %v", got, err)
	}
	if got.LastUsedAt.IsZero() {
		t.Errorf("LastUsedAt not set by Authenticate")
	}
	k2, _ := mustKey(t, b, store.CreateKeyParams{AccountID: a.ID})
	ks, err := b.Accounts.ListKeys(ctx, a.ID)
	if err != nil || len(ks) != 2 || ks[0].ID != k.ID || ks[1].ID != k2.ID {
		t.Fatalf("ListKeys = %+v, %v; want both keys, oldest first", ks, err)
	}
	if ks[0].LastUsedAt.IsZero() {
		t.Errorf("listed key lost its LastUsedAt")
	}
	if err := b.Accounts.RevokeKey(ctx, a.ID, k.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Accounts.Authenticate(ctx, secret); !errors.Is(err, store.ErrInvalidKey) {
		t.Fatalf("Authenticate(revoked) = %v, want ErrInvalidKey", err)
	}
	ks, _ = b.Accounts.ListKeys(ctx, a.ID)
	if len(ks) != 2 || !ks[0].Revoked() || ks[1].Revoked() {
		t.Fatalf("after revocation: %+v", ks)
	}
	first := ks[0].RevokedAt
	if err := b.Accounts.RevokeKey(ctx, a.ID, k.ID); err != nil {
		t.Fatalf("revoking twice: %v", err)
	}
	ks, _ = b.Accounts.ListKeys(ctx, a.ID)
	if !ks[0].RevokedAt.Equal(first) {
		t.Errorf("second revocation moved RevokedAt from %v to %v", first, ks[0].RevokedAt)
	}
}

func testSecretNotStored(t *testing.T, b *backend.Backend) {
	dumper, ok := b.Accounts.(Dumper)
	if !ok {
		t.Skip("the backend's Accounts has no Dump method")
	}
	ctx := context.Background()
	a := mustAccount(t, b, store.CreateAccountParams{})
	_, secret := mustKey(t, b, store.CreateKeyParams{AccountID: a.ID})
	given := store.NewSecret()
	mustKey(t, b, store.CreateKeyParams{AccountID: a.ID, Secret: given})
	if _, err := b.Accounts.Authenticate(ctx, secret); err != nil {
		t.Fatal(err)
	}
	data, err := dumper.Dump(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(data, []byte(store.HashSecret(secret))) {
		t.Fatal("the dump does not hold the key's hash: it is not a dump of the backend's data")
	}
	for _, s := range []string{secret, given} {
		body := strings.TrimPrefix(s, store.SecretPrefix)
		for _, needle := range []string{s, body, body[8:]} {
			if bytes.Contains(data, []byte(needle)) {
				t.Fatalf("the backend's data contains the secret (%q)", needle)
			}
		}
	}
}

func testKeyPermissions(t *testing.T, b *backend.Backend) {
	ctx := context.Background()
	a := mustAccount(t, b, store.CreateAccountParams{})
	k, secret := mustKey(t, b, store.CreateKeyParams{AccountID: a.ID, Permissions: []store.Permission{store.PermKeys, store.PermWebhooks}})
	got, err := b.Accounts.Authenticate(ctx, secret)
	if err != nil || fmt.Sprint(got.Permissions) != fmt.Sprint(k.Permissions) || !got.Can(store.PermWebhooks) || got.Can(store.PermValidate) {
		t.Fatalf("Authenticate = %+v, %v", got, err)
	}
	empty, _ := mustKey(t, b, store.CreateKeyParams{AccountID: a.ID, Permissions: []store.Permission{}})
	if len(empty.Permissions) != 0 {
		t.Errorf("a key created with no permissions has %v", empty.Permissions)
	}
	if _, _, err := b.Accounts.CreateKey(ctx, store.CreateKeyParams{AccountID: a.ID, Permissions: []store.Permission{"root"}}); !errors.Is(err, store.ErrInvalidPermission) {
		t.Errorf("CreateKey with an invalid permission: %v", err)
	}
}

func testGivenSecret(t *testing.T, b *backend.Backend) {
	ctx := context.Background()
	a := mustAccount(t, b, store.CreateAccountParams{})
	given := store.NewSecret()
	k, secret := mustKey(t, b, store.CreateKeyParams{AccountID: a.ID, Secret: given})
	if secret != given || k.Hash != store.HashSecret(given) {
		t.Fatalf("CreateKey with a given secret returned %q, %+v", secret, k)
	}
	if got, err := b.Accounts.Authenticate(ctx, given); err != nil || got.ID != k.ID {
		t.Fatalf("Authenticate(given) = %+v, %v", got, err)
	}
	if _, _, err := b.Accounts.CreateKey(ctx, store.CreateKeyParams{AccountID: a.ID, Secret: given}); !errors.Is(err, store.ErrKeyExists) {
		t.Errorf("the same secret twice: %v, want ErrKeyExists", err)
	}
	if _, _, err := b.Accounts.CreateKey(ctx, store.CreateKeyParams{AccountID: a.ID, Secret: "vm_live_short"}); err == nil {
		t.Errorf("a malformed given secret was accepted")
	}
}

func testAuthenticateRejects(t *testing.T, b *backend.Backend) {
	ctx := context.Background()
	a := mustAccount(t, b, store.CreateAccountParams{})
	_, secret := mustKey(t, b, store.CreateKeyParams{AccountID: a.ID})
	last := secret[len(secret)-1]
	flipped := secret[:len(secret)-1] + string(map[bool]byte{true: 'a', false: 'b'}[last != 'a'])
	for _, s := range []string{"", "vm_live_", flipped, store.NewSecret(), strings.ToUpper(secret), " " + secret, secret + "x", store.HashSecret(secret)} {
		if _, err := b.Accounts.Authenticate(ctx, s); !errors.Is(err, store.ErrInvalidKey) {
			t.Errorf("Authenticate(%q) = %v, want ErrInvalidKey", s, err)
		}
	}
}

func testRevokeOther(t *testing.T, b *backend.Backend) {
	ctx := context.Background()
	a := mustAccount(t, b, store.CreateAccountParams{})
	other := mustAccount(t, b, store.CreateAccountParams{})
	k, secret := mustKey(t, b, store.CreateKeyParams{AccountID: a.ID})
	if err := b.Accounts.RevokeKey(ctx, other.ID, k.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("revoking another account's key: %v, want ErrNotFound", err)
	}
	if _, err := b.Accounts.Authenticate(ctx, secret); err != nil {
		t.Fatalf("the key stopped working: %v", err)
	}
	if ks, _ := b.Accounts.ListKeys(ctx, other.ID); len(ks) != 0 {
		t.Fatalf("another account lists %d keys", len(ks))
	}
}

func testCanceled(t *testing.T, b *backend.Backend) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	e := email()
	if _, err := b.Accounts.CreateAccount(ctx, store.CreateAccountParams{Email: e}); !errors.Is(err, context.Canceled) {
		t.Fatalf("CreateAccount with a canceled context: %v", err)
	}
	if _, err := b.Accounts.GetAccountByEmail(context.Background(), e); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a canceled CreateAccount created the account: %v", err)
	}
}

// testSetPlan changes an account's plan, seen by every later read; an
// unknown account or a bad name changes nothing.
func testSetPlan(t *testing.T, b *backend.Backend) {
	ps, ok := b.Accounts.(store.PlanSetter)
	if !ok {
		t.Skip("the backend's Accounts cannot change plans")
	}
	ctx := context.Background()
	a := mustAccount(t, b, store.CreateAccountParams{})
	other := mustAccount(t, b, store.CreateAccountParams{})
	if a.Plan != store.DefaultPlan {
		t.Fatalf("a new account's plan is %q, want %q", a.Plan, store.DefaultPlan)
	}
	if err := ps.SetPlan(ctx, a.ID, "pro-2026"); err != nil {
		t.Fatal(err)
	}
	for _, get := range []func() (store.Account, error){
		func() (store.Account, error) { return b.Accounts.GetAccount(ctx, a.ID) },
		func() (store.Account, error) { return b.Accounts.GetAccountByEmail(ctx, a.Email) },
	} {
		got, err := get()
		if err != nil || got.Plan != "pro-2026" || got.Email != a.Email || !got.CreatedAt.Equal(a.CreatedAt) {
			t.Fatalf("after SetPlan: %+v, %v", got, err)
		}
	}
	if got, err := b.Accounts.GetAccount(ctx, other.ID); err != nil || got.Plan != store.DefaultPlan {
		t.Fatalf("another account's plan: %+v, %v", got, err)
	}
	if err := ps.SetPlan(ctx, uuid.NewString(), "pro"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("SetPlan of an unknown account: %v", err)
	}
	for _, bad := range []string{"", "has space", "x/y", strings.Repeat("p", store.MaxPlanBytes+1)} {
		if err := ps.SetPlan(ctx, a.ID, bad); !errors.Is(err, store.ErrInvalidPlan) {
			t.Errorf("SetPlan(%q): %v", bad, err)
		}
	}
	if got, _ := b.Accounts.GetAccount(ctx, a.ID); got.Plan != "pro-2026" {
		t.Fatalf("bad names changed the plan to %q", got.Plan)
	}
}
