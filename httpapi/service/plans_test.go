package service_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/validmail/validmail/httpapi"
	"github.com/validmail/validmail/httpapi/service"
	"github.com/validmail/validmail/plans"
	"github.com/validmail/validmail/store"
	"github.com/validmail/validmail/store/backend"
	"github.com/validmail/validmail/store/ratelimit"
)

// TestPlanRateAcrossInstances puts one account on a plan of 10 requests
// a second (burst 10) and sends its requests to two instances of one
// deployment in turn: together they allow what one bucket of that plan
// allows, however the requests are spread, while an account on the
// default plan making as many requests meanwhile is never limited.
func TestPlanRateAcrossInstances(t *testing.T) {
	t.Parallel()
	catalog, err := plans.New("free", []plans.Plan{{Name: "slow", RatePerSecond: 10, Burst: 10}, {Name: "free"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tg := range listTargets() {
		t.Run(tg.name, func(t *testing.T) {
			t.Parallel()
			b1, b2 := twoInstances(t, tg)
			var svcs []*service.Service
			// Memory has no limiter of its own: its one process shares one.
			var shared ratelimit.Limiter
			if b1.Limiter == nil {
				shared = ratelimit.NewMemory(nil)
			}
			for _, b := range []*backend.Backend{b1, b2} {
				svc, err := service.New(b, &service.Config{Validator: &gate{}, Workers: -1,
					API: httpapi.Config{Plans: catalog, RateLimiter: shared}})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { svc.Close() })
				svcs = append(svcs, svc)
			}
			ctx := context.Background()
			key := func(email string) (string, string) {
				a, err := b1.Accounts.CreateAccount(ctx, store.CreateAccountParams{Email: email})
				if err != nil {
					t.Fatal(err)
				}
				_, k, err := b1.Accounts.CreateKey(ctx, store.CreateKeyParams{AccountID: a.ID})
				if err != nil {
					t.Fatal(err)
				}
				return a.ID, k
			}
			slowID, slowKey := key("slow@example.org")
			_, freeKey := key("free@example.org")
			if err := b2.Accounts.(store.PlanSetter).SetPlan(ctx, slowID, "slow"); err != nil {
				t.Fatal(err)
			}
			get := func(i int, k string) int {
				r := httptest.NewRequest("GET", "/api/v1/account", nil)
				r.Header.Set("x-api-key", k)
				rec := httptest.NewRecorder()
				svcs[i%2].Handler().ServeHTTP(rec, r)
				if rec.Code != http.StatusOK && rec.Code != http.StatusTooManyRequests {
					t.Fatalf("GET /api/v1/account: %d %s", rec.Code, rec.Body)
				}
				return rec.Code
			}
			const n = 40
			start := time.Now()
			slowOK, freeOK := 0, 0
			for i := range n {
				if get(i, slowKey) == http.StatusOK {
					slowOK++
				}
				if get(i, freeKey) == http.StatusOK {
					freeOK++
				}
			}
			elapsed := time.Since(start).Seconds()
			// One bucket: its burst, then 10 a second for the time taken.
			// (On a machine so slow that one bucket could allow all n,
			// only the bound is checked.)
			if most := 10 + int(10*elapsed) + 1; slowOK > most || (slowOK == n && most < n) {
				t.Errorf("the slow plan allowed %d of %d requests in %.2f s over two instances; one bucket allows at most %d", slowOK, n, elapsed, most)
			}
			if slowOK < 10 {
				t.Errorf("the slow plan allowed %d requests, fewer than its burst", slowOK)
			}
			if freeOK != n {
				t.Errorf("the default plan allowed %d of %d requests", freeOK, n)
			}
			t.Logf("slow: %d of %d allowed in %.2f s", slowOK, n, elapsed)
		})
	}
}
