package httpapi_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/validmail/validmail/httpapi"
	"github.com/validmail/validmail/store"
	"github.com/validmail/validmail/store/ratelimit"
	"github.com/validmail/validmail/webhook"
)

// Surrounding white space is trimmed before validating, and an address
// over 1 KB is refused before anything is charged.
func TestAddressTrimmedAndBounded(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	resp := f.do(t, req{method: "GET", target: "/validate?email=" + url.QueryEscape(" jane@good.com\t"), key: f.key})
	m := resp.JSON(t)
	if resp.Code != 200 || m["email"] != "jane@good.com" || m["confidence"].(map[string]any)["status"] != "LIKELY" {
		t.Fatalf("trimmed address: %d %s", resp.Code, resp.Body)
	}
	before := f.balance(t, f.acct.ID)
	long := strings.Repeat("a", 1100) + "@good.com"
	resp = f.do(t, req{method: "GET", target: "/validate?email=" + long, key: f.key})
	wantProblem(t, resp, http.StatusBadRequest, "address_too_long")
	if strings.Contains(string(resp.Body), long) {
		t.Error("the long address was echoed back")
	}
	resp = f.do(t, req{method: "POST", target: "/validate/async", key: f.key, body: `{"emails":["a@good.com","` + long + `"]}`})
	wantProblem(t, resp, http.StatusBadRequest, "address_too_long")
	if after := f.balance(t, f.acct.ID); after != before {
		t.Errorf("balance %d after refused requests, want %d", after, before)
	}
}

// A NUL byte or invalid UTF-8 in a batch address is a result
// (INVALID_FORMAT), on every backend, not a 500; in a key name or an
// Idempotency-Key it is a 400.
func TestNULAndInvalidUTF8(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	f.runPool(t)
	resp := f.do(t, req{method: "POST", target: "/validate/async", key: f.key, body: `{"emails":["a\u0000b@good.com","ok@good.com"]}`})
	if resp.Code != http.StatusAccepted {
		t.Fatalf("batch with a NUL: %d %s", resp.Code, resp.Body)
	}
	resp = f.do(t, req{method: "POST", target: "/api/v1/keys", key: f.key, body: `{"name":"a\u0000b"}`})
	wantProblem(t, resp, http.StatusBadRequest, "invalid_body")
	resp = f.do(t, req{method: "POST", target: "/validate/async", key: f.key, body: `{"emails":["a@good.com"]}`,
		header: map[string]string{"Idempotency-Key": "k\x01"}})
	wantProblem(t, resp, http.StatusBadRequest, "invalid_body")
	resp = f.do(t, req{method: "GET", target: "/validate?email=a%00b@good.com", key: f.key})
	if m := resp.JSON(t); resp.Code != 200 || m["confidence"].(map[string]any)["status"] != "INVALID_FORMAT" {
		t.Fatalf("GET with a NUL: %d %s", resp.Code, resp.Body)
	}
}

func TestCreateKeyStrict(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	for _, body := range []string{
		`{"permissions":["validate","validate"]}`,
		`{"permissions":[]}`,
		`{"name":"x","admin":true}`,
		`{"name":"x"} {"name":"y"}`,
	} {
		resp := f.do(t, req{method: "POST", target: "/api/v1/keys", key: f.key, body: body})
		if resp.Code != http.StatusBadRequest {
			t.Errorf("%s: %d %s, want 400", body, resp.Code, resp.Body)
		}
	}
}

// An account holds at most 100 active keys: more keys are no way around
// the rate limits.
func TestKeyCap(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	for i := 1; i < 100; i++ { // the fixture's own key is the first
		f.newKey(t, f.acct.ID, store.SignupPermissions())
	}
	resp := f.do(t, req{method: "POST", target: "/api/v1/keys", key: f.key, body: `{"name":"one too many"}`})
	m := wantProblem(t, resp, http.StatusConflict, "key_limit_reached")
	if d, _ := m["detail"].(string); !strings.Contains(d, "holds 100 active keys") {
		t.Errorf("detail %q does not give the active keys", d)
	}
	ks, err := f.st.ListKeys(t.Context(), f.acct.ID)
	if err != nil || len(ks) != 100 {
		t.Fatalf("%d keys after the refusal (%v), want 100", len(ks), err)
	}
}

// A key may revoke only keys whose permissions it holds, and itself only
// when it says so.
func TestRevokeRules(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	keysOnly := f.newKey(t, f.acct.ID, []store.Permission{store.PermKeys})
	ks, err := f.st.ListKeys(t.Context(), f.acct.ID)
	if err != nil {
		t.Fatal(err)
	}
	ownerID, keysOnlyID := ks[0].ID, ks[len(ks)-1].ID
	resp := f.do(t, req{method: "DELETE", target: "/api/v1/keys/" + ownerID, key: keysOnly})
	wantProblem(t, resp, http.StatusForbidden, "permission_denied")
	resp = f.do(t, req{method: "DELETE", target: "/api/v1/keys/" + keysOnlyID, key: keysOnly})
	wantProblem(t, resp, http.StatusConflict, "confirmation_required")
	resp = f.do(t, req{method: "DELETE", target: "/api/v1/keys/" + keysOnlyID + "?confirm=true", key: keysOnly})
	if resp.Code != http.StatusOK {
		t.Fatalf("confirmed self-revocation: %d %s", resp.Code, resp.Body)
	}
	resp = f.do(t, req{method: "GET", target: "/api/v1/account", key: f.key})
	if resp.Code != http.StatusOK {
		t.Fatalf("the owner's key was locked out: %d", resp.Code)
	}
}

// More keys are no way around the rate limit: the account's keys share
// one limit on top of each key's.
func TestAccountLimitAcrossKeys(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	h, err := httpapi.NewHandler(f.v, f.ledger, f.queue, f.st, &httpapi.Config{
		RateLimit:        ratelimit.Limit{PerSecond: 1000, Burst: 1000},
		AccountRateLimit: ratelimit.Limit{PerSecond: 0.001, Burst: 20},
	})
	if err != nil {
		t.Fatal(err)
	}
	keys := make([]string, 25)
	for i := range keys {
		keys[i] = f.newKey(t, f.acct.ID, store.SignupPermissions())
	}
	allowed, limited := 0, 0
	for i := range 100 {
		resp := f.do(t, req{method: "GET", target: "/api/v1/account", key: keys[i%len(keys)], handler: h})
		switch resp.Code {
		case http.StatusOK:
			allowed++
		case http.StatusTooManyRequests:
			limited++
		default:
			t.Fatalf("%d %s", resp.Code, resp.Body)
		}
	}
	if allowed != 20 || limited != 80 {
		t.Fatalf("25 keys, 100 requests: %d allowed, %d limited; want 20 and 80", allowed, limited)
	}
}

// countingAccounts counts key lookups.
type countingAccounts struct {
	store.Accounts
	lookups atomic.Int32
}

func (c *countingAccounts) Authenticate(ctx context.Context, secret string) (store.Key, error) {
	c.lookups.Add(1)
	return c.Accounts.Authenticate(ctx, secret)
}

// Guessing keys from one address is limited, and once limited costs no
// lookup; other addresses, its /24 neighbours' too, are not affected: the
// API's clients are machines, which a cloud provider's /24 shares among
// strangers.
func TestAuthFailuresLimitedPerAddress(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	ca := &countingAccounts{Accounts: f.st}
	h, err := httpapi.NewHandler(f.v, f.ledger, f.queue, ca, &httpapi.Config{
		AuthFailureLimit: ratelimit.Limit{PerSecond: 0.001, Burst: 10},
	})
	if err != nil {
		t.Fatal(err)
	}
	call := func(key, addr string) int {
		r := httptest.NewRequest("GET", "/api/v1/account", nil)
		r.RemoteAddr = addr + ":1234"
		r.Header.Set("x-api-key", key)
		rec := httptest.NewRecorder()
		f.api.Handler(t, h).ServeHTTP(rec, r)
		return rec.Code
	}
	codes := map[int]int{}
	for range 30 {
		codes[call(store.NewSecret(), "198.51.100.7")]++
	}
	// The burst of 10 failures passes; the 11th empties the bucket and
	// is the last that costs a lookup.
	if codes[http.StatusUnauthorized] != 11 || codes[http.StatusTooManyRequests] != 19 {
		t.Fatalf("30 guesses: %v; want 11 × 401 then 19 × 429", codes)
	}
	if n := ca.lookups.Load(); n != 11 {
		t.Errorf("%d key lookups, want 11: a limited address must cost nothing", n)
	}
	if code := call(f.key, "198.51.100.7"); code != http.StatusTooManyRequests {
		t.Errorf("the guesser's address with a valid key: %d, want 429", code)
	}
	if code := call(f.key, "198.51.100.8"); code != http.StatusOK {
		t.Errorf("a neighbour in the guesser's /24 with a valid key: %d, want 200", code)
	}
}

// With the default limits, 200 keys of one account sending 2,000 requests
// as fast as they can get the account's burst and rate, not 200 times a
// key's.
func TestAccountLimitDefaults(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	h, err := httpapi.NewHandler(f.v, f.ledger, f.queue, f.st, &httpapi.Config{MaxKeysPerAccount: -1})
	if err != nil {
		t.Fatal(err)
	}
	keys := make([]string, 200)
	for i := range keys {
		keys[i] = f.newKey(t, f.acct.ID, store.SignupPermissions())
	}
	start := time.Now()
	allowed := 0
	for i := range 2000 {
		if resp := f.do(t, req{method: "GET", target: "/api/v1/account", key: keys[i%len(keys)], handler: h}); resp.Code == http.StatusOK {
			allowed++
		}
	}
	elapsed := time.Since(start)
	most := httpapi.DefaultAccountRateBurst + int(httpapi.DefaultAccountRatePerSecond*elapsed.Seconds()) + 1
	t.Logf("200 keys, 2,000 requests in %v: %d allowed (account limit %d/s, burst %d)", elapsed.Round(time.Millisecond), allowed,
		httpapi.DefaultAccountRatePerSecond, httpapi.DefaultAccountRateBurst)
	if allowed > most {
		t.Fatalf("%d allowed, at most %d expected", allowed, most)
	}
}

// The delivery log pages with a cursor: a whole batch's deliveries can be
// read back, each once.
func TestDeliveryLogPaging(t *testing.T) {
	t.Parallel()
	f := setup(t, &options{webhooks: true})
	resp := f.do(t, req{method: "PUT", target: "/api/v1/webhook", key: f.key, body: `{"url":"https://hooks.example.org/vm"}`})
	if resp.Code/100 != 2 {
		t.Fatalf("PUT webhook: %d %s", resp.Code, resp.Body)
	}
	now := time.Now()
	for i := range 1200 {
		ev, _ := webhook.NewEvent(f.acct.ID, strconv.Itoa(i+1), []byte(`{}`), now.Add(time.Duration(i/100)*time.Millisecond))
		if err := f.hooks.Enqueue(t.Context(), ev); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]bool{}
	target := "/api/v1/webhook/deliveries?limit=500"
	pages := 0
	for {
		resp := f.do(t, req{method: "GET", target: target, key: f.key})
		m := resp.JSON(t)
		if resp.Code != 200 {
			t.Fatalf("%d %s", resp.Code, resp.Body)
		}
		pages++
		for _, d := range m["deliveries"].([]any) {
			id := d.(map[string]any)["event_id"].(string)
			if seen[id] {
				t.Fatalf("delivery %s on two pages", id)
			}
			seen[id] = true
		}
		next, _ := m["next_cursor"].(string)
		if next == "" {
			break
		}
		target = "/api/v1/webhook/deliveries?limit=500&cursor=" + url.QueryEscape(next)
	}
	if len(seen) != 1200 || pages != 3 {
		t.Fatalf("%d deliveries in %d pages, want 1200 in 3", len(seen), pages)
	}
	resp = f.do(t, req{method: "GET", target: "/api/v1/webhook/deliveries?cursor=nonsense", key: f.key})
	wantProblem(t, resp, http.StatusBadRequest, "invalid_body")
}
