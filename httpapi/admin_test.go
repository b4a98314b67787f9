package httpapi_test

import (
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/httpapi"
	"github.com/validmail/validmail/plans"
)

const adminToken = "op_0123456789abcdefghijklmnopqrstuvwxyz"

func adminReq(method, target, token, body string) req {
	r := req{method: method, target: target, body: body, header: map[string]string{}}
	if token != "" {
		r.header["Authorization"] = "Bearer " + token
	}
	return r
}

func TestAdminRoutesOffByDefault(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	wantProblem(t, f.do(t, adminReq("GET", "/api/v1/admin/accounts/owner@good.com", adminToken, "")), 404, "not_found")
	wantProblem(t, f.do(t, adminReq("POST", "/api/v1/admin/accounts/owner@good.com/grants", adminToken, `{"credits":5,"reason":"x"}`)), 404, "not_found")
	// An API key with every permission opens nothing either.
	wantProblem(t, f.do(t, req{method: "GET", target: "/api/v1/admin/accounts/owner@good.com", key: f.key}), 404, "not_found")
	if b := f.balance(t, f.acct.ID); b != 300 {
		t.Fatalf("balance %d", b)
	}
}

func TestAdminTokenConfig(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	for _, tok := range []string{"short", strings.Repeat("x", httpapi.MinAdminTokenBytes-1), strings.Repeat("x", 40) + " y", strings.Repeat("é", 20)} {
		_, err := httpapi.NewHandler(f.v, f.ledger, f.queue, f.st, &httpapi.Config{AdminToken: tok})
		if !errors.Is(err, httpapi.ErrConfig) {
			t.Errorf("token %q: err %v, want ErrConfig", tok, err)
		}
	}
}

func TestAdminAuthentication(t *testing.T) {
	t.Parallel()
	f := setup(t, &options{adminToken: adminToken})
	target := "/api/v1/admin/accounts/owner@good.com"
	r := f.do(t, adminReq("GET", target, "", ""))
	wantProblem(t, r, 401, "missing_api_key")
	if r.Header.Get("WWW-Authenticate") == "" {
		t.Fatal("401 without WWW-Authenticate")
	}
	for _, tc := range []struct{ name, header string }{
		{"last byte", "Bearer " + adminToken[:len(adminToken)-1] + "X"},
		{"prefix", "Bearer " + adminToken[:10]},
		{"longer", "Bearer " + adminToken + "x"},
		{"lower-case scheme, wrong token", "bearer " + adminToken + "x"},
		{"two spaces", "Bearer  " + adminToken},
		{"basic", "Basic " + adminToken},
		{"NUL", "Bearer " + adminToken + "\x00"},
	} {
		rq := adminReq("GET", target, "", "")
		rq.header["Authorization"] = tc.header
		r := f.do(t, rq)
		if r.Code != 401 {
			t.Errorf("%s: status %d %s", tc.name, r.Code, r.Body)
		}
	}
	// The scheme's case does not matter.
	rq := adminReq("GET", target, "", "")
	rq.header["Authorization"] = "bEARER " + adminToken
	if r := f.do(t, rq); r.Code != 200 {
		t.Fatalf("a lower-case scheme: %d %s", r.Code, r.Body)
	}
	// An API key is no operator token.
	rq = adminReq("GET", target, f.key, "")
	rq.key = f.key
	wantProblem(t, f.do(t, rq), 401, "invalid_api_key")
	if !strings.Contains(f.logs.String(), `"status":401`) || strings.Contains(f.logs.String(), adminToken[8:]) {
		t.Fatal("the log lacks the failures or shows the token")
	}
}

// Guessing the token is throttled per client address, like API keys, and
// a blocked address is refused before the token is compared.
func TestAdminGuessingThrottled(t *testing.T) {
	t.Parallel()
	f := setup(t, &options{adminToken: adminToken})
	target := "/api/v1/admin/accounts/owner@good.com"
	limited := false
	for i := 0; i < 100 && !limited; i++ {
		r := f.do(t, adminReq("GET", target, "wrong-"+strings.Repeat("g", i), ""))
		limited = r.Code == 429
	}
	if !limited {
		t.Fatal("100 wrong tokens from one address were never limited")
	}
	r := f.do(t, adminReq("GET", target, adminToken, ""))
	wantProblem(t, r, 429, "rate_limited")
	if r.Header.Get("Retry-After") == "" {
		t.Fatal("429 without Retry-After")
	}
}

func TestAdminShowAndGrant(t *testing.T) {
	t.Parallel()
	f := setup(t, &options{adminToken: adminToken})
	show := func() map[string]any {
		t.Helper()
		r := f.do(t, adminReq("GET", "/api/v1/admin/accounts/"+url.PathEscape("Owner@Good.com"), adminToken, ""))
		if r.Code != 200 {
			t.Fatalf("show: %d %s", r.Code, r.Body)
		}
		return r.JSON(t)
	}
	m := show()
	if m["account_id"] != f.acct.ID || m["balance"] != float64(300) {
		t.Fatalf("show: %v", m)
	}
	if c := m["credits"].(map[string]any); c["signup"] != float64(300) || c["granted"] != float64(0) {
		t.Fatalf("credits: %v", c)
	}

	grants := "/api/v1/admin/accounts/owner@good.com/grants"
	rq := adminReq("POST", grants, adminToken, `{"credits":5000,"reason":"invoice 2026-0042"}`)
	rq.header["Idempotency-Key"] = "pay_1"
	r := f.do(t, rq)
	if r.Code != 201 {
		t.Fatalf("grant: %d %s", r.Code, r.Body)
	}
	g := r.JSON(t)
	e := g["entry"].(map[string]any)
	if g["balance"] != float64(5300) || g["replayed"] != false || e["reason"] != "grant" || e["reference"] != "invoice 2026-0042" || e["delta"] != float64(5000) {
		t.Fatalf("grant: %s", r.Body)
	}
	// The provider delivers twice: credited once.
	rq.body = `{"credits":5000,"reason":"a retry"}`
	r = f.do(t, rq)
	if r.Code != 200 || r.JSON(t)["replayed"] != true || r.JSON(t)["entry"].(map[string]any)["id"] != e["id"] {
		t.Fatalf("replay: %d %s", r.Code, r.Body)
	}
	rq.body = `{"credits":6000,"reason":"another amount"}`
	wantProblem(t, f.do(t, rq), 422, "idempotency_key_reused")
	// Without a key, each grant is its own.
	if r := f.do(t, adminReq("POST", grants, adminToken, `{"credits":7,"reason":"goodwill"}`)); r.Code != 201 {
		t.Fatalf("grant: %d %s", r.Code, r.Body)
	}
	if b := f.balance(t, f.acct.ID); b != 5307 {
		t.Fatalf("balance %d, want 5307", b)
	}
	if c := show()["credits"].(map[string]any); c["signup"] != float64(300) || c["granted"] != float64(5007) {
		t.Fatalf("credits after grants: %v", c)
	}
	// The customer sees the grant, with its reason, in the history.
	h := f.do(t, req{method: "GET", target: "/api/v1/credits/history", key: f.key}).JSON(t)
	first := h["entries"].([]any)[1].(map[string]any)
	if first["reason"] != "grant" || first["reference"] != "invoice 2026-0042" {
		t.Fatalf("history: %v", h)
	}
}

func TestAdminHostileInput(t *testing.T) {
	t.Parallel()
	f := setup(t, &options{adminToken: adminToken})
	grants := "/api/v1/admin/accounts/owner@good.com/grants"
	for _, tc := range []struct {
		name, target, body, ctype, idem string
		status                          int
		code                            string
	}{
		{"not JSON", grants, `{"credits":`, "", "", 400, "invalid_json"},
		{"unknown field", grants, `{"credits":5,"reason":"x","plan":"pro"}`, "", "", 400, "invalid_body"},
		{"two values", grants, `{"credits":5,"reason":"x"}{}`, "", "", 400, "invalid_json"},
		{"zero", grants, `{"credits":0,"reason":"x"}`, "", "", 400, "invalid_body"},
		{"negative", grants, `{"credits":-5,"reason":"x"}`, "", "", 400, "invalid_body"},
		{"fraction", grants, `{"credits":1.5,"reason":"x"}`, "", "", 400, "invalid_body"},
		{"huge", grants, `{"credits":1000000001,"reason":"x"}`, "", "", 400, "invalid_body"},
		{"overflow", grants, `{"credits":99999999999999999999,"reason":"x"}`, "", "", 400, "invalid_body"},
		{"string", grants, `{"credits":"5","reason":"x"}`, "", "", 400, "invalid_body"},
		{"no reason", grants, `{"credits":5}`, "", "", 400, "invalid_body"},
		{"empty reason", grants, `{"credits":5,"reason":""}`, "", "", 400, "invalid_body"},
		{"NUL reason", grants, `{"credits":5,"reason":"a\u0000b"}`, "", "", 400, "invalid_body"},
		{"newline reason", grants, `{"credits":5,"reason":"a\nb"}`, "", "", 400, "invalid_body"},
		{"long reason", grants, `{"credits":5,"reason":"` + strings.Repeat("r", 201) + `"}`, "", "", 400, "invalid_body"},
		{"big body", grants, `{"credits":5,"reason":"x","pad":"` + strings.Repeat("p", 5000) + `"}`, "", "", 413, "body_too_large"},
		{"text body", grants, `credits=5`, "text/plain", "", 415, "unsupported_media_type"},
		{"control in key", grants, `{"credits":5,"reason":"x"}`, "", "k\x01", 400, "invalid_body"},
		{"long key", grants, `{"credits":5,"reason":"x"}`, "", strings.Repeat("k", 256), 400, "invalid_body"},
		{"unknown account", "/api/v1/admin/accounts/nobody@good.com/grants", `{"credits":5,"reason":"x"}`, "", "", 404, "not_found"},
		{"NUL email", "/api/v1/admin/accounts/owner%00@good.com/grants", `{"credits":5,"reason":"x"}`, "", "", 404, "not_found"},
		{"not UTF-8 email", "/api/v1/admin/accounts/owner%ff@good.com/grants", `{"credits":5,"reason":"x"}`, "", "", 404, "not_found"},
		{"long email", "/api/v1/admin/accounts/" + strings.Repeat("a", 400) + "@good.com/grants", `{"credits":5,"reason":"x"}`, "", "", 404, "not_found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rq := adminReq("POST", tc.target, adminToken, tc.body)
			if tc.ctype != "" {
				rq.header["Content-Type"] = tc.ctype
			}
			if tc.idem != "" {
				rq.header["Idempotency-Key"] = tc.idem
			}
			wantProblem(t, f.do(t, rq), tc.status, tc.code)
		})
	}
	for _, target := range []string{"/api/v1/admin/accounts/owner%00@good.com", "/api/v1/admin/accounts/%ff", "/api/v1/admin/accounts/" + strings.Repeat("a", 400)} {
		wantProblem(t, f.do(t, adminReq("GET", target, adminToken, "")), 404, "not_found")
	}
	// A body without a length, larger than the bound.
	big := httptest.NewRequest("POST", grants, io.MultiReader(strings.NewReader(`{"credits":5,"reason":"`), strings.NewReader(strings.Repeat("r", 1<<20)), strings.NewReader(`"}`)))
	big.ContentLength = -1
	big.Header.Set("Authorization", "Bearer "+adminToken)
	big.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	f.checked.ServeHTTP(rec, big)
	if m := wantProblem(t, &response{Code: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes()}, 413, "body_too_large"); m["detail"] != "The body exceeds 4096 bytes." {
		t.Fatalf("detail %v", m["detail"])
	}
	wantProblem(t, f.do(t, adminReq("DELETE", "/api/v1/admin/accounts/owner@good.com", adminToken, "")), 405, "method_not_allowed")
	wantProblem(t, f.do(t, adminReq("GET", grants, adminToken, "")), 405, "method_not_allowed")
	if b := f.balance(t, f.acct.ID); b != 300 {
		t.Fatalf("refused grants changed the balance to %d", b)
	}
}

// Two instances on one store, a payment's webhook delivered to both at
// once: the account is credited once.
func TestAdminGrantTwoInstances(t *testing.T) {
	t.Parallel()
	f := setup(t, &options{adminToken: adminToken})
	other, err := httpapi.NewHandler(f.v, credits.New(f.st, nil), f.queue, f.st, &httpapi.Config{AdminToken: adminToken})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	codes := make([]int, 20)
	for i := range codes {
		wg.Go(func() {
			rq := adminReq("POST", "/api/v1/admin/accounts/owner@good.com/grants", adminToken, `{"credits":1000,"reason":"order 7"}`)
			rq.header["Idempotency-Key"] = "order-7"
			if i%2 == 1 {
				rq.handler = other
			}
			codes[i] = f.do(t, rq).Code
		})
	}
	wg.Wait()
	created := 0
	for _, c := range codes {
		switch c {
		case 201:
			created++
		case 200:
		default:
			t.Fatalf("codes %v", codes)
		}
	}
	if created != 1 || f.balance(t, f.acct.ID) != 1300 {
		t.Fatalf("created %d, balance %d", created, f.balance(t, f.acct.ID))
	}
	hist, _ := f.ledger.History(context.Background(), f.acct.ID)
	if len(hist) != 2 {
		t.Fatalf("%d entries", len(hist))
	}
}

// TestAdminSetPlan puts an account on a plan through the operator's API:
// the account shows it, its rate limit follows it, and a plan the
// catalog does not define is refused.
func TestAdminSetPlan(t *testing.T) {
	t.Parallel()
	catalog, err := plans.New("free", []plans.Plan{{Name: "tiny", RatePerSecond: 1, Burst: 2}})
	if err != nil {
		t.Fatal(err)
	}
	f := setup(t, &options{adminToken: adminToken, configure: func(c *httpapi.Config) { c.Plans = catalog; c.KeyCacheTTL = -1 }})
	target := "/api/v1/admin/accounts/owner@good.com/plan"
	wantProblem(t, f.do(t, adminReq("PUT", target, adminToken, `{"plan":"gold"}`)), 400, "unknown_plan")
	wantProblem(t, f.do(t, adminReq("PUT", target, adminToken, `{"plan":"a b"}`)), 400, "invalid_body")
	wantProblem(t, f.do(t, adminReq("PUT", "/api/v1/admin/accounts/nobody@good.com/plan", adminToken, `{"plan":"tiny"}`)), 404, "not_found")
	for range 5 {
		if r := f.do(t, req{method: "GET", target: "/api/v1/account", key: f.key}); r.Code != 200 {
			t.Fatalf("on the default plan: %d %s", r.Code, r.Body)
		}
	}
	r := f.do(t, adminReq("PUT", target, adminToken, `{"plan":"tiny"}`))
	if r.Code != 200 || r.JSON(t)["plan"] != "tiny" {
		t.Fatalf("set plan: %d %s", r.Code, r.Body)
	}
	if got := f.do(t, req{method: "GET", target: "/api/v1/account", key: f.key}).JSON(t)["plan"]; got != "tiny" {
		t.Fatalf("GET /api/v1/account plan = %v", got)
	}
	limited := false
	for range 5 {
		if r := f.do(t, req{method: "GET", target: "/api/v1/account", key: f.key}); r.Code == 429 {
			limited = true
			break
		}
	}
	if !limited {
		t.Fatal("five requests at once on a plan of burst 2 were all allowed")
	}
}
