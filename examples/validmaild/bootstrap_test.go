package main

import (
	"context"
	"errors"
	"sync"
	"testing"

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
			acct, shown, err := bootstrap(ctx, s, "ops@example.com", secret)
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

	// A restart changes nothing.
	if acct, _, err := bootstrap(ctx, s, "OPS@example.com", secret); err != nil || acct.ID != ids[0] {
		t.Errorf("second bootstrap: %v %v", acct.ID, err)
	}
}

func TestBootstrapRefusals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := memstore.New()
	secret := store.NewSecret()
	if _, _, err := bootstrap(ctx, s, "a@example.com", secret); err != nil {
		t.Fatal(err)
	}
	if _, _, err := bootstrap(ctx, s, "b@example.com", secret); !errors.Is(err, errKeyForeign) {
		t.Errorf("key of another account: %v, want errKeyForeign", err)
	}

	acct, _ := s.GetAccountByEmail(ctx, "a@example.com")
	ks, _ := s.ListKeys(ctx, acct.ID)
	if err := s.RevokeKey(ctx, acct.ID, ks[0].ID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := bootstrap(ctx, s, "a@example.com", secret); !errors.Is(err, errKeyRevoked) {
		t.Errorf("revoked key: %v, want errKeyRevoked", err)
	}

	// A key with fewer permissions is not silently accepted.
	limited := store.NewSecret()
	if _, _, err := s.CreateKey(ctx, store.CreateKeyParams{AccountID: acct.ID, Secret: limited}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := bootstrap(ctx, s, "a@example.com", limited); err == nil {
		t.Errorf("key without every permission accepted")
	}
}

func TestBootstrapWithoutKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := memstore.New()
	_, shown, err := bootstrap(ctx, s, "demo@example.com", "")
	if err != nil || store.CheckSecret(shown) != nil {
		t.Fatalf("first bootstrap: %q %v, want a new secret", shown, err)
	}
	if _, err := s.Authenticate(ctx, shown); err != nil {
		t.Errorf("new secret: %v", err)
	}
	// The secret is shown once: an existing account gets no new key.
	if _, again, err := bootstrap(ctx, s, "demo@example.com", ""); err != nil || again != "" {
		t.Errorf("second bootstrap: %q %v, want no secret", again, err)
	}
}
