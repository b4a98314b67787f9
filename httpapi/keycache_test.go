package httpapi_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/validmail/validmail/httpapi"
	"github.com/validmail/validmail/store"
	"github.com/validmail/validmail/store/ratelimit"
)

// fakeClock is a clock tests move by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// A busy key is looked up once per KeyCacheTTL; a key revoked elsewhere
// (another instance, the console) stops working once the TTL has passed,
// and one revoked through this handler at once.
func TestKeyCache(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	clock := &fakeClock{now: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}
	ca := &countingAccounts{Accounts: f.st}
	h, err := httpapi.NewHandler(f.v, f.ledger, f.queue, ca, &httpapi.Config{
		RateLimit: ratelimit.Limit{PerSecond: -1}, Now: clock.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	get := func(key string) int {
		return f.do(t, req{method: "GET", target: "/api/v1/account", key: key, handler: h}).Code
	}
	for range 50 {
		if code := get(f.key); code != http.StatusOK {
			t.Fatalf("status %d", code)
		}
	}
	if n := ca.lookups.Load(); n != 1 {
		t.Fatalf("50 requests within the TTL made %d key lookups; want 1", n)
	}
	clock.Add(httpapi.DefaultKeyCacheTTL)
	get(f.key)
	if n := ca.lookups.Load(); n != 2 {
		t.Fatalf("a request after the TTL made %d lookups in all; want 2", n)
	}

	// Revoked in the store directly, as another instance would.
	ctx := context.Background()
	other := f.newKey(t, f.acct.ID, store.AllPermissions())
	if code := get(other); code != http.StatusOK {
		t.Fatalf("new key: status %d", code)
	}
	keys, err := f.st.ListKeys(ctx, f.acct.ID)
	if err != nil {
		t.Fatal(err)
	}
	var otherID string
	for _, k := range keys {
		if k.Prefix != "" && len(other) > len(k.Prefix) && other[:len(k.Prefix)] == k.Prefix {
			otherID = k.ID
		}
	}
	if err := f.st.RevokeKey(ctx, f.acct.ID, otherID); err != nil {
		t.Fatal(err)
	}
	clock.Add(httpapi.DefaultKeyCacheTTL / 2)
	if code := get(other); code != http.StatusOK {
		t.Fatalf("half a TTL after a revocation elsewhere: status %d; the cache may still trust it", code)
	}
	clock.Add(httpapi.DefaultKeyCacheTTL / 2)
	if code := get(other); code != http.StatusUnauthorized {
		t.Fatalf("a TTL after a revocation elsewhere: status %d; want 401", code)
	}

	// Revoked through this handler: refused at the next request.
	third := f.newKey(t, f.acct.ID, store.AllPermissions())
	if code := get(third); code != http.StatusOK {
		t.Fatalf("third key: status %d", code)
	}
	keys, _ = f.st.ListKeys(ctx, f.acct.ID)
	var thirdID string
	for _, k := range keys {
		if k.Prefix != "" && third[:len(k.Prefix)] == k.Prefix {
			thirdID = k.ID
		}
	}
	if code := f.do(t, req{method: "DELETE", target: "/api/v1/keys/" + thirdID, key: f.key, handler: h}).Code; code != http.StatusOK {
		t.Fatalf("revoke: status %d", code)
	}
	if code := get(third); code != http.StatusUnauthorized {
		t.Fatalf("right after its revocation through the API: status %d; want 401", code)
	}
}

// A negative KeyCacheTTL asks the backend on every request.
func TestKeyCacheOff(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	ca := &countingAccounts{Accounts: f.st}
	h, err := httpapi.NewHandler(f.v, f.ledger, f.queue, ca, &httpapi.Config{
		RateLimit: ratelimit.Limit{PerSecond: -1}, KeyCacheTTL: -1,
	})
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		f.do(t, req{method: "GET", target: "/api/v1/account", key: f.key, handler: h})
	}
	if n := ca.lookups.Load(); n != 5 {
		t.Fatalf("%d lookups for 5 requests; want 5", n)
	}
}

// Request ids are version 4 UUIDs, distinct.
func TestRequestIDs(t *testing.T) {
	f := setup(t, nil)
	seen := map[string]bool{}
	for range 1000 {
		id := f.do(t, req{method: "GET", target: "/api/v1/account", key: f.key}).Header.Get("X-Request-Id")
		u, err := uuid.Parse(id)
		if err != nil || u.Version() != 4 || u.Variant() != uuid.RFC4122 {
			t.Fatalf("request id %q: version %v, variant %v, %v", id, u.Version(), u.Variant(), err)
		}
		if seen[id] {
			t.Fatalf("request id %s given twice", id)
		}
		seen[id] = true
	}
}
