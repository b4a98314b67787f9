package service_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/httpapi/service"
	"github.com/validmail/validmail/store"
	"github.com/validmail/validmail/store/memstore"
)

func TestBootstrapIdempotent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := memstore.New()
	secret := store.NewSecret()

	// Many processes starting together all end with one account and key.
	var wg sync.WaitGroup
	ids := make([]string, 8)
	for i := range ids {
		wg.Go(func() {
			acct, shown, err := service.Bootstrap(ctx, s, service.BootstrapParams{Email: "ops@example.com", Credits: 0, Key: secret})
			if err != nil || shown != "" {
				t.Errorf("bootstrap: %q %v", shown, err)
			}
			ids[i] = acct.ID
		})
	}
	wg.Wait()
	for _, id := range ids {
		if id != ids[0] {
			t.Fatalf("account ids differ: %v", ids)
		}
	}
	ks, err := s.ListKeys(ctx, ids[0])
	if err != nil || len(ks) != 1 {
		t.Fatalf("keys = %v, %v; want one", ks, err)
	}
	k, err := s.Authenticate(ctx, secret)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range store.AllPermissions() {
		if !k.Can(p) {
			t.Errorf("bootstrap key lacks %s", p)
		}
	}
	if !k.Can(store.PermWebhooks) {
		t.Errorf("bootstrap key cannot manage the webhook")
	}

	// A restart changes nothing.
	if acct, _, err := service.Bootstrap(ctx, s, service.BootstrapParams{Email: "OPS@example.com", Credits: 0, Key: secret}); err != nil || acct.ID != ids[0] {
		t.Errorf("second bootstrap: %v %v", acct.ID, err)
	}
}

func TestBootstrapRefusals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := memstore.New()
	secret := store.NewSecret()
	if _, _, err := service.Bootstrap(ctx, s, service.BootstrapParams{Email: "a@example.com", Credits: 0, Key: secret}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := service.Bootstrap(ctx, s, service.BootstrapParams{Email: "b@example.com", Credits: 0, Key: secret}); !errors.Is(err, service.ErrKeyForeign) {
		t.Errorf("key of another account: %v, want service.ErrKeyForeign", err)
	}

	acct, _ := s.GetAccountByEmail(ctx, "a@example.com")
	ks, _ := s.ListKeys(ctx, acct.ID)
	if err := s.RevokeKey(ctx, acct.ID, ks[0].ID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := service.Bootstrap(ctx, s, service.BootstrapParams{Email: "a@example.com", Credits: 0, Key: secret}); !errors.Is(err, service.ErrKeyRevoked) {
		t.Errorf("revoked key: %v, want service.ErrKeyRevoked", err)
	}

	// A key with fewer permissions is not silently accepted.
	limited := store.NewSecret()
	if _, _, err := s.CreateKey(ctx, store.CreateKeyParams{AccountID: acct.ID, Secret: limited}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := service.Bootstrap(ctx, s, service.BootstrapParams{Email: "a@example.com", Credits: 0, Key: limited}); err == nil {
		t.Errorf("key without every permission accepted")
	}
}

func TestBootstrapWithoutKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := memstore.New()
	_, shown, err := service.Bootstrap(ctx, s, service.BootstrapParams{Email: "demo@example.com", Credits: 0, Key: ""})
	if err != nil || store.CheckSecret(shown) != nil {
		t.Fatalf("first bootstrap: %q %v, want a new secret", shown, err)
	}
	if k, err := s.Authenticate(ctx, shown); err != nil || !k.Can(store.PermWebhooks) {
		t.Errorf("new secret: %v, %v; want a key that can manage the webhook", k.Permissions, err)
	}
	// The secret is shown once: an existing account gets no new key.
	if _, again, err := service.Bootstrap(ctx, s, service.BootstrapParams{Email: "demo@example.com", Credits: 0, Key: ""}); err != nil || again != "" {
		t.Errorf("second bootstrap: %q %v, want no secret", again, err)
	}
}

func TestBootstrapCredits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := memstore.New()
	ledger := credits.New(s, nil)
	for _, tc := range []struct {
		email   string
		credits int64
		want    int64
	}{
		{"default@example.com", 0, store.DefaultSignupCredits},
		{"big@example.com", 5000, 5000},
	} {
		acct, _, err := service.Bootstrap(ctx, s, service.BootstrapParams{Email: tc.email, Credits: tc.credits, Key: ""})
		if err != nil {
			t.Fatal(err)
		}
		if got, err := ledger.Balance(ctx, acct.ID); err != nil || got != tc.want {
			t.Errorf("%s: balance %d, %v; want %d", tc.email, got, err, tc.want)
		}
		// An existing account keeps its balance.
		if _, _, err := service.Bootstrap(ctx, s, service.BootstrapParams{Email: tc.email, Credits: 7, Key: ""}); err != nil {
			t.Fatal(err)
		}
		if got, _ := ledger.Balance(ctx, acct.ID); got != tc.want {
			t.Errorf("%s after a second bootstrap: balance %d, want %d", tc.email, got, tc.want)
		}
	}
}
