package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/jobs"
	"github.com/validmail/validmail/jobs/jobsdriver"
	"github.com/validmail/validmail/store"
	"github.com/validmail/validmail/store/ratelimit"
)

func TestValidate(t *testing.T) {
	t.Parallel()
	f := setup(t, &options{limit: ratelimit.Limit{PerSecond: 50, Burst: 100}})
	resp := f.do(t, req{method: "GET", target: "/validate?email=jane%2Bnews@good.com", key: f.key})
	if resp.Code != http.StatusOK {
		t.Fatalf("status %d: %s", resp.Code, resp.Body)
	}
	m := resp.JSON(t)
	if got := keysOf(m); got != "confidence,did_you_mean,email,meta,provider,reason,requestId,validations" {
		t.Fatalf("fields %s", got)
	}
	if m["reason"] != "valid" {
		t.Fatalf("reason %v, want valid", m["reason"])
	}
	if got := keysOf(m["validations"].(map[string]any)); got != "domain_exists,is_disposable,mx_records,syntax" {
		t.Fatalf("validations fields %s", got)
	}
	conf := m["confidence"].(map[string]any)
	if got := keysOf(conf); got != "alias_status,canonical_email,confidence_score,equivalent_domains,is_role_based,status" {
		t.Fatalf("confidence fields %s", got)
	}
	if got := keysOf(m["meta"].(map[string]any)); got != "latency_ms,source" {
		t.Fatalf("meta fields %s", got)
	}
	if m["email"] != "jane+news@good.com" || conf["status"] != "LIKELY" || m["meta"].(map[string]any)["source"] != "api" {
		t.Fatalf("result %s", resp.Body)
	}
	if resp.Header.Get("RateLimit-Limit") != "100" || resp.Header.Get("RateLimit-Remaining") != "99" || resp.Header.Get("RateLimit-Reset") == "" {
		t.Fatalf("rate-limit headers %v", resp.Header)
	}
	if n := f.balance(t, f.acct.ID); n != 299 {
		t.Fatalf("balance %d, want 299", n)
	}
}

func TestValidateUnknownRefunded(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	resp := f.do(t, req{method: "GET", target: "/validate?email=a@servfail.com", key: f.key})
	if resp.Code != http.StatusOK {
		t.Fatalf("status %d: %s", resp.Code, resp.Body)
	}
	if st := resp.JSON(t)["confidence"].(map[string]any)["status"]; st != "UNKNOWN" {
		t.Fatalf("status %v, want UNKNOWN", st)
	}
	if n := f.balance(t, f.acct.ID); n != 300 {
		t.Fatalf("balance %d after an UNKNOWN result, want 300", n)
	}
	h, _ := f.ledger.History(context.Background(), f.acct.ID)
	if len(h) != 3 || h[1].Reason != credits.ReasonCharge || h[2].Reason != credits.ReasonRefund {
		t.Fatalf("history %+v, want signup, charge, refund", h)
	}
}

func TestValidateInsufficientCredits(t *testing.T) {
	t.Parallel()
	f := setup(t, &options{credits: -1})
	resp := f.do(t, req{method: "GET", target: "/validate?email=a@good.com", key: f.key})
	m := wantProblem(t, resp, http.StatusPaymentRequired, "insufficient_credits")
	if m["balance"] != 0.0 || m["required"] != 1.0 {
		t.Fatalf("problem %s", resp.Body)
	}
}

// 1,000 concurrent validations on 300 credits: exactly 300 succeed.
func TestValidateConcurrentCredits(t *testing.T) {
	t.Parallel()
	f := setup(t, &options{noLog: true})
	const n = 1000
	codes := make(chan int, n)
	start := make(chan struct{})
	for i := range n {
		go func() {
			<-start
			resp := f.do(t, req{method: "GET", target: fmt.Sprintf("/validate?email=user%d@good.com", i), key: f.key})
			codes <- resp.Code
		}()
	}
	close(start)
	count := map[int]int{}
	for range n {
		count[<-codes]++
	}
	if count[200] != 300 || count[402] != 700 || len(count) != 2 {
		t.Fatalf("status counts %v, want 300×200 and 700×402", count)
	}
	if b := f.balance(t, f.acct.ID); b != 0 {
		t.Fatalf("balance %d, want 0", b)
	}
}

func TestBatchLifecycle(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	resp := f.do(t, req{method: "POST", target: "/validate/async", key: f.key,
		body: `{"emails":["a@good.com","b@servfail.com","not an address"]}`})
	if resp.Code != http.StatusAccepted {
		t.Fatalf("status %d: %s", resp.Code, resp.Body)
	}
	m := resp.JSON(t)
	if got := keysOf(m); got != "batch_id,job_count,job_ids,message,requestId,status_url" {
		t.Fatalf("fields %s", got)
	}
	if m["status_url"] != "/validate/status/{job_id}" || m["job_count"] != 3.0 {
		t.Fatalf("response %s", resp.Body)
	}
	var ids []string
	for _, id := range m["job_ids"].([]any) {
		ids = append(ids, id.(string))
	}
	if b := f.balance(t, f.acct.ID); b != 297 {
		t.Fatalf("balance %d, want 297", b)
	}
	// Before any worker runs: active, result null.
	st := f.do(t, req{method: "GET", target: "/validate/status/" + ids[0], key: f.key})
	if st.Code != 200 || !strings.Contains(string(st.Body), `"result":null`) || !strings.Contains(string(st.Body), `"state":"active"`) {
		t.Fatalf("active job: %d %s", st.Code, st.Body)
	}
	if got := keysOf(st.JSON(t)); got != "id,requestId,result,state" {
		t.Fatalf("job fields %s", got)
	}
	f.runPool(t)
	for i, id := range ids {
		var job map[string]any
		deadline := time.Now().Add(10 * time.Second)
		for {
			st := f.do(t, req{method: "GET", target: "/validate/status/" + id, key: f.key})
			job = st.JSON(t)
			if job["state"] == "completed" || time.Now().After(deadline) {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if job["state"] != "completed" || job["id"] != id {
			t.Fatalf("job %s: %v", id, job)
		}
		res := job["result"].(map[string]any)
		if got := keysOf(res); got != "confidence,did_you_mean,email,meta,provider,reason,validations" {
			t.Fatalf("result fields %s (requestId must be absent)", got)
		}
		if res["meta"].(map[string]any)["source"] != "api_async" {
			t.Fatalf("result meta %v", res["meta"])
		}
		want := []string{"LIKELY", "UNKNOWN", "INVALID_FORMAT"}[i]
		if s := res["confidence"].(map[string]any)["status"]; s != want {
			t.Fatalf("job %d status %v, want %s", i, s, want)
		}
	}
	// The UNKNOWN job's credit came back.
	if b := f.balance(t, f.acct.ID); b != 298 {
		t.Fatalf("balance %d, want 298", b)
	}
}

func TestBatchIdempotency(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	submit := func(body string) *response {
		return f.do(t, req{method: "POST", target: "/validate/async", key: f.key, body: body,
			header: map[string]string{"Idempotency-Key": "order-42"}})
	}
	first := submit(`{"emails":["a@good.com","b@good.com"]}`)
	if first.Code != http.StatusAccepted {
		t.Fatalf("status %d: %s", first.Code, first.Body)
	}
	// Same body, other formatting: the first response again.
	again := submit("{ \"emails\" : [ \"a@good.com\",\n \"b@good.com\" ] }")
	if again.Code != http.StatusAccepted {
		t.Fatalf("replay status %d: %s", again.Code, again.Body)
	}
	a, b := first.JSON(t), again.JSON(t)
	if fmt.Sprint(a["job_ids"]) != fmt.Sprint(b["job_ids"]) || a["requestId"] == b["requestId"] {
		t.Fatalf("replay %s, first %s", again.Body, first.Body)
	}
	// Same size, other body: 422.
	wantProblem(t, submit(`{"emails":["a@good.com","c@good.com"]}`), http.StatusUnprocessableEntity, "idempotency_key_reused")
	wantProblem(t, submit(`{"emails":["a@good.com"]}`), http.StatusUnprocessableEntity, "idempotency_key_reused")
	if n := f.balance(t, f.acct.ID); n != 298 {
		t.Fatalf("balance %d, want 298 (one charge)", n)
	}
	// The key belongs to the account: another account may use it.
	_, other := f.newAccount(t, "other@good.com", 0, store.SignupPermissions())
	resp := f.do(t, req{method: "POST", target: "/validate/async", key: other, body: `{"emails":["a@good.com","b@good.com"]}`,
		header: map[string]string{"Idempotency-Key": "order-42"}})
	if resp.Code != http.StatusAccepted || fmt.Sprint(resp.JSON(t)["job_ids"]) == fmt.Sprint(a["job_ids"]) {
		t.Fatalf("other account: %d %s", resp.Code, resp.Body)
	}
}

func TestBatchInsufficientCredits(t *testing.T) {
	t.Parallel()
	f := setup(t, &options{credits: 5})
	resp := f.do(t, req{method: "POST", target: "/validate/async", key: f.key,
		body: `{"emails":["a@good.com","b@good.com","c@good.com","d@good.com","e@good.com","f@good.com"]}`})
	m := wantProblem(t, resp, http.StatusPaymentRequired, "insufficient_credits")
	if m["balance"] != 5.0 || m["required"] != 6.0 {
		t.Fatalf("problem %s", resp.Body)
	}
	if n := f.balance(t, f.acct.ID); n != 5 {
		t.Fatalf("balance %d, want 5", n)
	}
	if ls, _ := f.st.Backend().Jobs.Lease(context.Background(), jobsdriver.LeaseParams{Max: 100, Duration: time.Second}); len(ls) != 0 {
		t.Fatalf("%d jobs created by a refused batch", len(ls))
	}
}

// A key of account A reading a job of account B gets the 404 of an unknown
// job.
func TestJobOfAnotherAccount(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	_, keyB := f.newAccount(t, "b@good.com", 0, store.SignupPermissions())
	resp := f.do(t, req{method: "POST", target: "/validate/async", key: keyB, body: `{"emails":["a@good.com"]}`})
	id := resp.JSON(t)["job_ids"].([]any)[0].(string)
	if r := f.do(t, req{method: "GET", target: "/validate/status/" + id, key: keyB}); r.Code != 200 {
		t.Fatalf("owner reads its job: %d", r.Code)
	}
	foreign := wantProblem(t, f.do(t, req{method: "GET", target: "/validate/status/" + id, key: f.key}), 404, "job_not_found")
	unknown := wantProblem(t, f.do(t, req{method: "GET", target: "/validate/status/999999", key: f.key}), 404, "job_not_found")
	delete(foreign, "requestId")
	delete(unknown, "requestId")
	if fmt.Sprint(foreign) != fmt.Sprint(unknown) {
		t.Fatalf("foreign job %v differs from unknown job %v", foreign, unknown)
	}
	wantProblem(t, f.do(t, req{method: "GET", target: "/validate/status/abc", key: f.key}), 404, "job_not_found")
}

func TestAccount(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	f.do(t, req{method: "GET", target: "/validate?email=a@good.com", key: f.key})
	resp := f.do(t, req{method: "GET", target: "/api/v1/account", key: f.key})
	if resp.Code != 200 {
		t.Fatalf("status %d: %s", resp.Code, resp.Body)
	}
	m := resp.JSON(t)
	if got := keysOf(m); got != "balance,created_at,email,plan,requestId,usage" {
		t.Fatalf("fields %s", got)
	}
	u := m["usage"].(map[string]any)
	if u["month"] != time.Now().UTC().Format("2006-01") || u["credits_charged"] != 1.0 || u["credits_refunded"] != 0.0 ||
		fmt.Sprint(u["validations"]) != "map[LIKELY:1]" {
		t.Fatalf("usage %v", u)
	}
	if m["email"] != "owner@good.com" || m["balance"] != 299.0 || m["plan"] != "free" {
		t.Fatalf("account %s", resp.Body)
	}
	ts := m["created_at"].(string)
	if !regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`).MatchString(ts) {
		t.Fatalf("created_at %q", ts)
	}
	if got, _ := time.Parse(time.RFC3339, ts); !got.Equal(f.acct.CreatedAt.Truncate(time.Millisecond)) {
		t.Fatalf("created_at %q, account created %v", ts, f.acct.CreatedAt)
	}
}

func TestPermissions(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	only := func(p ...store.Permission) string { return f.newKey(t, f.acct.ID, p) }
	cases := []struct {
		method, target, body string
		key                  string
		perm                 string
	}{
		{"GET", "/api/v1/account", "", only(store.PermValidate, store.PermBatch), "stats"},
		{"GET", "/validate?email=a@good.com", "", only(store.PermStats), "validate"},
		{"POST", "/validate/async", `{"emails":["a@good.com"]}`, only(store.PermValidate), "batch"},
		{"GET", "/validate/status/1", "", only(store.PermValidate), "batch"},
		{"GET", "/api/v1/keys", "", only(store.SignupPermissions()...), "keys"},
		{"POST", "/api/v1/keys", `{}`, only(store.SignupPermissions()...), "keys"},
		{"DELETE", "/api/v1/keys/x", "", only(store.SignupPermissions()...), "keys"},
	}
	for _, c := range cases {
		resp := f.do(t, req{method: c.method, target: c.target, key: c.key, body: c.body})
		m := wantProblem(t, resp, http.StatusForbidden, "permission_denied")
		if m["permission"] != c.perm || !strings.Contains(m["detail"].(string), c.perm) {
			t.Fatalf("%s %s: %s, want permission %s", c.method, c.target, resp.Body, c.perm)
		}
	}
	if n := f.balance(t, f.acct.ID); n != 300 {
		t.Fatalf("balance %d after refused requests", n)
	}
}

func TestKeys(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	resp := f.do(t, req{method: "POST", target: "/api/v1/keys", key: f.key, body: `{"name":"ci","permissions":["validate"]}`})
	if resp.Code != http.StatusCreated {
		t.Fatalf("create: %d %s", resp.Code, resp.Body)
	}
	created := resp.JSON(t)
	if got := keysOf(created); got != "created_at,id,key,last_used_at,name,permissions,prefix,requestId,revoked_at" {
		t.Fatalf("fields %s", got)
	}
	secret := created["key"].(string)
	if !strings.HasPrefix(secret, created["prefix"].(string)) || created["name"] != "ci" {
		t.Fatalf("created %s", resp.Body)
	}
	if r := f.do(t, req{method: "GET", target: "/validate?email=a@good.com", key: secret}); r.Code != 200 {
		t.Fatalf("new key: %d", r.Code)
	}
	// Defaults: the signup permissions.
	def := f.do(t, req{method: "POST", target: "/api/v1/keys", key: f.key}).JSON(t)
	if fmt.Sprint(def["permissions"]) != "[validate batch stats]" {
		t.Fatalf("default permissions %v", def["permissions"])
	}
	list := f.do(t, req{method: "GET", target: "/api/v1/keys", key: f.key})
	if list.Code != 200 || strings.Contains(string(list.Body), secret) || strings.Contains(string(list.Body), store.HashSecret(secret)) {
		t.Fatalf("list: %d %s", list.Code, list.Body)
	}
	if n := len(list.JSON(t)["keys"].([]any)); n != 3 {
		t.Fatalf("%d keys, want 3", n)
	}
	rev := f.do(t, req{method: "DELETE", target: "/api/v1/keys/" + created["id"].(string), key: f.key})
	if rev.Code != 200 || rev.JSON(t)["revoked_at"] == nil {
		t.Fatalf("revoke: %d %s", rev.Code, rev.Body)
	}
	// A revoked key: 401.
	wantProblem(t, f.do(t, req{method: "GET", target: "/validate?email=a@good.com", key: secret}), 401, "invalid_api_key")
	// Unknown key id, and another account's key: 404.
	wantProblem(t, f.do(t, req{method: "DELETE", target: "/api/v1/keys/nope", key: f.key}), 404, "not_found")
	b, _ := f.newAccount(t, "b@good.com", 0, store.AllPermissions())
	bKeys, _ := f.st.ListKeys(context.Background(), b.ID)
	wantProblem(t, f.do(t, req{method: "DELETE", target: "/api/v1/keys/" + bKeys[0].ID, key: f.key}), 404, "not_found")
	// A key cannot grant more than it has.
	limited := f.newKey(t, f.acct.ID, []store.Permission{store.PermKeys, store.PermValidate})
	m := wantProblem(t, f.do(t, req{method: "POST", target: "/api/v1/keys", key: limited, body: `{"permissions":["stats"]}`}), 403, "permission_denied")
	if m["permission"] != "stats" {
		t.Fatalf("problem %v", m)
	}
	wantProblem(t, f.do(t, req{method: "POST", target: "/api/v1/keys", key: f.key, body: `{"permissions":["root"]}`}), 400, "invalid_body")
	wantProblem(t, f.do(t, req{method: "POST", target: "/api/v1/keys", key: f.key, body: `{"name":` + strings.Repeat("x", 10) + `}`}), 400, "invalid_json")
}

func TestOpenAPIDocument(t *testing.T) {
	t.Parallel()
	f := setup(t, &options{webhooks: true})
	resp := f.do(t, req{method: "GET", target: "/openapi.json"})
	served := strings.Replace(string(f.h.OpenAPI()), `"url": "/"`, `"url": "http://example.com"`, 1)
	if resp.Code != 200 || string(resp.Body) != served {
		t.Fatalf("GET /openapi.json: %d", resp.Code)
	}
	var doc map[string]any
	if err := json.Unmarshal(resp.Body, &doc); err != nil || doc["openapi"] != "3.1.0" {
		t.Fatalf("document: %v %v", doc["openapi"], err)
	}
	// Every route the handler serves is documented.
	paths := doc["paths"].(map[string]any)
	for _, p := range []string{"/validate", "/validate/async", "/validate/status/{job_id}", "/api/v1/account", "/api/v1/keys", "/api/v1/keys/{id}", "/openapi.json",
		"/api/v1/webhook", "/api/v1/webhook/test", "/api/v1/webhook/deliveries", "/api/v1/lists"} {
		if paths[p] == nil {
			t.Errorf("path %s not documented", p)
		}
	}
}

// The handler works under a prefix.
func TestMountedUnderPrefix(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	mux := http.NewServeMux()
	mux.Handle("/email/", http.StripPrefix("/email", f.checked))
	resp := f.do(t, req{method: "GET", target: "/email/validate?email=a@good.com", key: f.key, handler: mux, mounted: true})
	if resp.Code != 200 {
		t.Fatalf("mounted GET /validate: %d %s", resp.Code, resp.Body)
	}
	resp = f.do(t, req{method: "POST", target: "/email/validate/async", key: f.key, body: `{"emails":["a@good.com"]}`, handler: mux, mounted: true})
	id := resp.JSON(t)["job_ids"].([]any)[0].(string)
	if r := f.do(t, req{method: "GET", target: "/email/validate/status/" + id, key: f.key, handler: mux, mounted: true}); r.Code != 200 {
		t.Fatalf("mounted status: %d %s", r.Code, r.Body)
	}
	if r := f.do(t, req{method: "GET", target: "/email/openapi.json", handler: mux, mounted: true}); r.Code != 200 {
		t.Fatalf("mounted openapi: %d", r.Code)
	}
}

var _ = jobs.StateActive

// The OpenAPI check fails on drift: an extra field, a missing header, an
// undocumented status.
func TestOpenAPICheckCatchesDrift(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	r := httptest.NewRequest("GET", "/validate?email=a@good.com", nil)
	good := f.do(t, req{method: "GET", target: "/validate?email=a@good.com", key: f.key})
	if err := f.api.Check(r, good.Code, good.Header, good.Body, false); err != nil {
		t.Fatal(err)
	}
	extra := *good
	extra.Body = []byte(strings.Replace(string(good.Body), `"requestId"`, `"user_id":"u","requestId"`, 1))
	noHeader := *good
	noHeader.Header = good.Header.Clone()
	noHeader.Header.Del("X-Request-Id")
	teapot := *good
	teapot.Code = http.StatusTeapot
	for name, resp := range map[string]*response{"extra field": &extra, "missing X-Request-Id": &noHeader, "undocumented status": &teapot} {
		if err := f.api.Check(r, resp.Code, resp.Header, resp.Body, false); err == nil {
			t.Errorf("%s passed the OpenAPI check", name)
		}
	}
}

func TestCreditHistory(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	for _, e := range []string{"a@good.com", "b@good.com", "c@nowhere.invalid"} {
		f.do(t, req{method: "GET", target: "/validate?email=" + e, key: f.key})
	}
	var seen []string
	target := "/api/v1/credits/history?limit=2"
	for range 5 {
		resp := f.do(t, req{method: "GET", target: target, key: f.key})
		if resp.Code != 200 {
			t.Fatalf("%s: %d %s", target, resp.Code, resp.Body)
		}
		m := resp.JSON(t)
		for _, e := range m["entries"].([]any) {
			e := e.(map[string]any)
			seen = append(seen, fmt.Sprint(e["reason"], e["delta"]))
		}
		next, _ := m["next_cursor"].(string)
		if next == "" {
			break
		}
		target = "/api/v1/credits/history?limit=2&cursor=" + next
	}
	// Newest first: the last validation's charge (its INVALID result is
	// not refunded), two charges, the signup grant.
	if got := strings.Join(seen, ","); got != "charge-1,charge-1,charge-1,signup300" {
		t.Fatalf("history %s", got)
	}
	wantProblem(t, f.do(t, req{method: "GET", target: "/api/v1/credits/history?cursor=nonsense", key: f.key}), 400, "invalid_body")
	wantProblem(t, f.do(t, req{method: "GET", target: "/api/v1/credits/history?limit=0", key: f.key}), 400, "invalid_body")
}
