package httpapi_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/validmail/validmail/httpapi"
	"github.com/validmail/validmail/store"
	"github.com/validmail/validmail/store/ratelimit"
)

// Failed authentications count per IPv6 /64: walking the addresses of
// one network gains nothing, while another network is not affected.
func TestAuthFailuresLimitedPerNetwork(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	h, err := httpapi.NewHandler(f.v, f.ledger, f.queue, f.st, &httpapi.Config{
		AuthFailureLimit: ratelimit.Limit{PerSecond: 0.001, Burst: 10},
	})
	if err != nil {
		t.Fatal(err)
	}
	call := func(key, addr string) int {
		r := httptest.NewRequest("GET", "/api/v1/account", nil)
		r.RemoteAddr = addr
		r.Header.Set("x-api-key", key)
		rec := httptest.NewRecorder()
		f.api.Handler(t, h).ServeHTTP(rec, r)
		return rec.Code
	}
	codes := map[int]int{}
	for i := range 30 {
		codes[call(store.NewSecret(), fmt.Sprintf("[2001:db8:7:7:%x::1]:1234", i+1))]++
	}
	if codes[http.StatusUnauthorized] != 11 || codes[http.StatusTooManyRequests] != 19 {
		t.Fatalf("30 guesses from 30 addresses of one /64: %v; want 11 × 401 then 19 × 429", codes)
	}
	if code := call(store.NewSecret(), "[2001:db8:7:8::1]:1234"); code != http.StatusUnauthorized {
		t.Errorf("a guess from the next /64: %d, want 401", code)
	}
	if code := call(f.key, "[2001:db8:7:8::2]:1234"); code != http.StatusOK {
		t.Errorf("a valid key from the next /64: %d", code)
	}
}

// Test events are limited per account, whichever key sends them.
func TestWebhookTestLimited(t *testing.T) {
	t.Parallel()
	f := setup(t, &options{webhooks: true})
	other := f.newKey(t, f.acct.ID, store.AllPermissions())
	if resp := f.do(t, req{method: "PUT", target: "/api/v1/webhook", key: f.key, body: `{"url":"https://hooks.example.org/vm"}`}); resp.Code/100 != 2 {
		t.Fatalf("PUT webhook: %d %s", resp.Code, resp.Body)
	}
	sent := 0
	for i := range 30 {
		key := f.key
		if i%2 == 1 {
			key = other
		}
		resp := f.do(t, req{method: "POST", target: "/api/v1/webhook/test", key: key})
		if resp.Code == http.StatusOK {
			sent++
			continue
		}
		if resp.Code != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" || resp.JSON(t)["code"] != "rate_limited" {
			t.Fatalf("test event %d: %d %v %s", i, resp.Code, resp.Header, resp.Body)
		}
		// The bucket refills far slower than these requests come: its
		// burst, then the refusal.
		if sent < httpapi.DefaultWebhookTestBurst {
			t.Fatalf("refused after %d test events from two keys of one account; want %d first", sent, httpapi.DefaultWebhookTestBurst)
		}
		return
	}
	t.Fatal("30 test events of one account and no refusal")
}
