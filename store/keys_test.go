package store_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/validmail/validmail/store"
)

func TestNewSecret(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for range 1000 {
		s := store.NewSecret()
		if len(s) != 51 || !strings.HasPrefix(s, "vm_live_") {
			t.Fatalf("secret %q: want vm_live_ and 43 characters", s)
		}
		if err := store.CheckSecret(s); err != nil {
			t.Fatalf("CheckSecret(%q): %v", s, err)
		}
		if seen[s] {
			t.Fatalf("secret %q generated twice", s)
		}
		seen[s] = true
	}
}

func TestCheckSecret(t *testing.T) {
	t.Parallel()
	good := store.NewSecret()
	for _, s := range []string{"", "vm_live_", good[:50], good + "a", "vm_test_" + good[8:], good[:50] + "-", good[:50] + "é"} {
		if err := store.CheckSecret(s); !errors.Is(err, store.ErrInvalidKey) {
			t.Errorf("CheckSecret(%q) = %v, want ErrInvalidKey", s, err)
		}
	}
}

func TestHashAndPrefix(t *testing.T) {
	t.Parallel()
	s := "vm_live_" + strings.Repeat("a", 43)
	if h := store.HashSecret(s); len(h) != 64 || h != store.HashSecret(s) || h == store.HashSecret(s[:50]+"b") {
		t.Fatalf("HashSecret = %q", h)
	}
	// Known SHA-256 of "abc".
	if h := store.HashSecret("abc"); h != "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" {
		t.Fatalf("HashSecret(abc) = %s", h)
	}
	if p := store.DisplayPrefix(s); p != "vm_live_aaaa" {
		t.Fatalf("DisplayPrefix = %q", p)
	}
}

func TestPermissions(t *testing.T) {
	t.Parallel()
	for _, p := range store.AllPermissions() {
		got, err := store.ParsePermission(string(p))
		if err != nil || got != p {
			t.Errorf("ParsePermission(%q) = %q, %v", p, got, err)
		}
	}
	for _, s := range []string{"", "admin", "Validate"} {
		if _, err := store.ParsePermission(s); !errors.Is(err, store.ErrInvalidPermission) {
			t.Errorf("ParsePermission(%q) = %v", s, err)
		}
	}
	k := store.Key{Permissions: store.SignupPermissions()}
	if !k.Can(store.PermValidate) || !k.Can(store.PermBatch) || !k.Can(store.PermStats) || k.Can(store.PermKeys) || k.Can(store.PermWebhooks) {
		t.Errorf("signup permissions %v", k.Permissions)
	}
}

func TestCreateAccountParamsDefaults(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ give, want int64 }{{0, 300}, {-1, 0}, {5, 5}} {
		if got := (store.CreateAccountParams{SignupCredits: tc.give}).Credits(); got != tc.want {
			t.Errorf("Credits() with %d = %d, want %d", tc.give, got, tc.want)
		}
	}
	if p := (store.CreateAccountParams{}).PlanOrDefault(); p != "free" {
		t.Errorf("default plan %q", p)
	}
}

func ExampleDisplayPrefix() {
	secret := "vm_live_7Kq2" + strings.Repeat("x", 39)
	fmt.Println(store.DisplayPrefix(secret))
	// Output: vm_live_7Kq2
}
