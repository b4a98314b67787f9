package main

import (
	"net/http"
	"strconv"
	"sync"
	"testing"

	"github.com/validmail/validmail/store"
)

// TestSharedRateLimit starts two instances on one store with a limit of 3
// requests at once per key, refilled at one request every 5 s, and spends
// the burst on A. On Redis and PostgreSQL alike the limit is the
// deployment's: B refuses the next request at once with 429 and
// Retry-After.
func TestSharedRateLimit(t *testing.T) {
	for _, tc := range []struct {
		store testStore
	}{
		{stores()[2]},
		{stores()[1]},
	} {
		t.Run(tc.store.name, func(t *testing.T) {
			t.Parallel()
			url := tc.store.fresh(t)
			key := store.NewSecret()
			args := []string{"-store", url, "-workers", "0", "-rate-limit", "0.2", "-rate-burst", "3",
				"-bootstrap-email", "limit@example.com", "-bootstrap-key", key}
			var a, b *instance
			var wg sync.WaitGroup
			wg.Go(func() { a = start(t, args...) })
			wg.Go(func() { b = start(t, args...) })
			wg.Wait()
			if t.Failed() {
				t.FailNow()
			}
			ca, cb := client{t, a.base, key}, client{t, b.base, key}

			for i := range 3 {
				resp, m := ca.do("GET", "/api/v1/account", nil)
				if resp.StatusCode != 200 {
					t.Fatalf("request %d on A: %d %v", i+1, resp.StatusCode, m)
				}
				if got, want := resp.Header.Get("RateLimit-Remaining"), strconv.Itoa(2-i); got != want {
					t.Errorf("request %d on A: RateLimit-Remaining %q, want %s", i+1, got, want)
				}
			}
			resp, m := cb.do("GET", "/api/v1/account", nil)
			retry, err := strconv.Atoi(resp.Header.Get("Retry-After"))
			if resp.StatusCode != http.StatusTooManyRequests || m["code"] != "rate_limited" || err != nil || retry < 1 || retry > 5 {
				t.Fatalf("B after A's burst: %d Retry-After %q %v, want 429 rate_limited with Retry-After 1–5 s",
					resp.StatusCode, resp.Header.Get("Retry-After"), m)
			}
			if got := resp.Header.Get("RateLimit-Remaining"); got != "0" {
				t.Errorf("B's 429: RateLimit-Remaining %q, want 0", got)
			}
			// And A, too, is refused now.
			if resp, _ := ca.do("GET", "/api/v1/account", nil); resp.StatusCode != http.StatusTooManyRequests {
				t.Errorf("A after the burst: %d, want 429", resp.StatusCode)
			}
			a.stop()
			b.stop()
		})
	}
}
