package storetest

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"

	"github.com/validmail/validmail/store"
	"github.com/validmail/validmail/store/backend"
)

// testTwoFactor: a login's second factor is stored, read back, kept
// against a second enable, removed and enabled anew; steps are accepted only when later than the last;
// recovery codes work once; logins are apart; the team requirement is
// per account.
func testTwoFactor(t *testing.T, b *backend.Backend) {
	if b.TwoFactor == nil {
		t.Skip("backend keeps no second factors")
	}
	ctx := context.Background()
	tf := b.TwoFactor
	a := mustAccount(t, b, store.CreateAccountParams{})
	other := mustAccount(t, b, store.CreateAccountParams{})
	member := uuid.NewString()

	if _, err := tf.TOTP(ctx, a.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("TOTP before enabling: %v", err)
	}
	for _, tc := range []struct {
		name string
		t    store.TOTP
		want error
	}{
		{"unknown account", store.TOTP{LoginID: uuid.NewString(), AccountID: uuid.NewString(), Secret: "S"}, store.ErrNotFound},
		{"too many codes", store.TOTP{LoginID: a.ID, AccountID: a.ID, Secret: "S", RecoveryHashes: make([]string, store.MaxRecoveryCodes+1)}, store.ErrTooManyCodes},
	} {
		if err := tf.EnableTOTP(ctx, tc.t); !errors.Is(err, tc.want) {
			t.Errorf("EnableTOTP, %s: %v, want %v", tc.name, err, tc.want)
		}
	}
	codes := []string{store.HashSecret("rc-1"), store.HashSecret("rc-2")}
	want := store.TOTP{LoginID: a.ID, AccountID: a.ID, Secret: "JBSWY3DPEHPK3PXP", RecoveryHashes: slices.Clone(codes), LastStep: 7}
	if err := tf.EnableTOTP(ctx, want); err != nil {
		t.Fatal(err)
	}
	if err := tf.EnableTOTP(ctx, store.TOTP{LoginID: member, AccountID: a.ID, Secret: "MEMBERSECRET", RecoveryHashes: codes[:1]}); err != nil {
		t.Fatal(err)
	}
	got, err := tf.TOTP(ctx, a.ID)
	slices.Sort(got.RecoveryHashes)
	slices.Sort(want.RecoveryHashes)
	if err != nil || got.LoginID != want.LoginID || got.AccountID != want.AccountID || got.Secret != want.Secret ||
		got.LastStep != want.LastStep || !slices.Equal(got.RecoveryHashes, want.RecoveryHashes) {
		t.Errorf("TOTP = %+v, %v; want %+v", got, err, want)
	}
	twoFactorSteps(ctx, t, tf, a.ID, member)
	twoFactorRecovery(ctx, t, tf, a.ID, member, codes)

	// Enabling over a factor is refused: secret, codes and step stay.
	if err := tf.EnableTOTP(ctx, store.TOTP{LoginID: a.ID, AccountID: a.ID, Secret: "NEWSECRET"}); !errors.Is(err, store.ErrTOTPExists) {
		t.Errorf("EnableTOTP over a factor: %v, want ErrTOTPExists", err)
	}
	if got, err := tf.TOTP(ctx, a.ID); err != nil || got.Secret != want.Secret || len(got.RecoveryHashes) != 1 || got.LastStep != 10 {
		t.Errorf("TOTP after a refused enable = %+v, %v", got, err)
	}
	// Disabled, then enabled anew: the new secret, codes and step.
	if err := tf.DisableTOTP(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	if err := tf.EnableTOTP(ctx, store.TOTP{LoginID: a.ID, AccountID: a.ID, Secret: "NEWSECRET"}); err != nil {
		t.Fatal(err)
	}
	if got, err := tf.TOTP(ctx, a.ID); err != nil || got.Secret != "NEWSECRET" || len(got.RecoveryHashes) != 0 || got.LastStep != 0 {
		t.Errorf("TOTP after enabling anew = %+v, %v", got, err)
	}
	if err := tf.DisableTOTP(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	if err := tf.DisableTOTP(ctx, a.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("DisableTOTP twice: %v", err)
	}
	if _, err := tf.TOTP(ctx, a.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("TOTP after disabling: %v", err)
	}
	if _, err := tf.UseTOTPStep(ctx, a.ID, 100); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("UseTOTPStep after disabling: %v", err)
	}
	if _, err := tf.UseRecoveryCode(ctx, a.ID, codes[1]); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("UseRecoveryCode after disabling: %v", err)
	}
	if _, err := tf.TOTP(ctx, member); err != nil {
		t.Errorf("the member's TOTP after the owner's was disabled: %v", err)
	}
	twoFactorTeam(ctx, t, tf, a, other)
}

// twoFactorSteps: a step is accepted once, and no earlier one after it.
func twoFactorSteps(ctx context.Context, t *testing.T, tf store.TwoFactor, login, other string) {
	t.Helper()
	for _, tc := range []struct {
		login string
		step  int64
		want  bool
	}{
		{login, 7, false}, // the step enabled with
		{login, 8, true},
		{login, 8, false}, // replayed
		{login, 6, false}, // earlier
		{login, 10, true},
		{other, 8, true}, // another login's steps are its own
		{login, 9, false},
	} {
		ok, err := tf.UseTOTPStep(ctx, tc.login, tc.step)
		if err != nil || ok != tc.want {
			t.Errorf("UseTOTPStep(%d) = %v, %v; want %v", tc.step, ok, err, tc.want)
		}
	}
	if _, err := tf.UseTOTPStep(ctx, uuid.NewString(), 1); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("UseTOTPStep of an unknown login: %v", err)
	}
	if got, err := tf.TOTP(ctx, login); err != nil || got.LastStep != 10 {
		t.Errorf("LastStep = %d, %v; want 10", got.LastStep, err)
	}
}

// twoFactorRecovery: a recovery code works once, only for its login.
func twoFactorRecovery(ctx context.Context, t *testing.T, tf store.TwoFactor, login, member string, codes []string) {
	t.Helper()
	for _, tc := range []struct {
		login, hash string
		want        bool
	}{
		{login, store.HashSecret("rc-3"), false},
		{login, codes[0], true},
		{login, codes[0], false},
		{member, codes[1], false}, // the owner's code, not the member's
		{member, codes[0], true},  // the member's own, once used by the owner
	} {
		ok, err := tf.UseRecoveryCode(ctx, tc.login, tc.hash)
		if err != nil || ok != tc.want {
			t.Errorf("UseRecoveryCode(%s…) = %v, %v; want %v", tc.hash[:8], ok, err, tc.want)
		}
	}
	if _, err := tf.UseRecoveryCode(ctx, uuid.NewString(), codes[1]); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("UseRecoveryCode of an unknown login: %v", err)
	}
	if got, err := tf.TOTP(ctx, login); err != nil || !slices.Equal(got.RecoveryHashes, codes[1:]) {
		t.Errorf("recovery codes left = %v, %v; want %v", got.RecoveryHashes, err, codes[1:])
	}
}

// twoFactorTeam: the requirement is off at first, set and cleared per
// account; an unknown account cannot set one and requires none.
func twoFactorTeam(ctx context.Context, t *testing.T, tf store.TwoFactor, a, other store.Account) {
	t.Helper()
	check := func(id string, want bool) {
		t.Helper()
		if got, err := tf.TeamTOTP(ctx, id); err != nil || got != want {
			t.Errorf("TeamTOTP = %v, %v; want %v", got, err, want)
		}
	}
	check(a.ID, false)
	if err := tf.SetTeamTOTP(ctx, a.ID, true); err != nil {
		t.Fatal(err)
	}
	check(a.ID, true)
	check(other.ID, false)
	if err := tf.SetTeamTOTP(ctx, a.ID, false); err != nil {
		t.Fatal(err)
	}
	check(a.ID, false)
	unknown := uuid.NewString()
	if err := tf.SetTeamTOTP(ctx, unknown, true); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("SetTeamTOTP of an unknown account: %v", err)
	}
	check(unknown, false)
}

// testTwoFactorOnce: of eight concurrent uses of one step, and of one
// recovery code, exactly one succeeds.
func testTwoFactorOnce(t *testing.T, b *backend.Backend) {
	if b.TwoFactor == nil {
		t.Skip("backend keeps no second factors")
	}
	ctx := context.Background()
	a := mustAccount(t, b, store.CreateAccountParams{})
	code := store.HashSecret("rc-" + uuid.NewString())
	if err := b.TwoFactor.EnableTOTP(ctx, store.TOTP{LoginID: a.ID, AccountID: a.ID, Secret: "S", RecoveryHashes: []string{code}}); err != nil {
		t.Fatal(err)
	}
	var steps, recoveries atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if ok, err := b.TwoFactor.UseTOTPStep(ctx, a.ID, 42); err != nil {
				t.Error(err)
			} else if ok {
				steps.Add(1)
			}
			if ok, err := b.TwoFactor.UseRecoveryCode(ctx, a.ID, code); err != nil {
				t.Error(err)
			} else if ok {
				recoveries.Add(1)
			}
		})
	}
	wg.Wait()
	if steps.Load() != 1 || recoveries.Load() != 1 {
		t.Errorf("of 8 concurrent uses, %d steps and %d recovery codes succeeded; want 1 each", steps.Load(), recoveries.Load())
	}
}

// testTwoFactorEnableRace: of eight concurrent enables of one login's
// second factor, exactly one succeeds, the others get [store.ErrTOTPExists],
// and the factor stored is the winner's.
func testTwoFactorEnableRace(t *testing.T, b *backend.Backend) {
	if b.TwoFactor == nil {
		t.Skip("backend keeps no second factors")
	}
	ctx := context.Background()
	a := mustAccount(t, b, store.CreateAccountParams{})
	var won atomic.Int32
	var winner atomic.Value
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			secret := "SECRET" + string(rune('A'+i))
			err := b.TwoFactor.EnableTOTP(ctx, store.TOTP{LoginID: a.ID, AccountID: a.ID, Secret: secret, RecoveryHashes: []string{store.HashSecret(secret)}})
			switch {
			case err == nil:
				won.Add(1)
				winner.Store(secret)
			case !errors.Is(err, store.ErrTOTPExists):
				t.Errorf("EnableTOTP: %v", err)
			}
		})
	}
	wg.Wait()
	if won.Load() != 1 {
		t.Fatalf("of 8 concurrent enables, %d succeeded; want 1", won.Load())
	}
	got, err := b.TwoFactor.TOTP(ctx, a.ID)
	w, _ := winner.Load().(string)
	if err != nil || got.Secret != w || !slices.Equal(got.RecoveryHashes, []string{store.HashSecret(w)}) {
		t.Errorf("TOTP = %+v, %v; want the winner's %s and its one code", got, err, w)
	}
}
