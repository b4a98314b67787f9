package dashboard_test

import (
	"context"
	"encoding/json"
	"errors"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/httpapi"
	"github.com/validmail/validmail/httpapi/dashboard"
	"github.com/validmail/validmail/jobs"
	"github.com/validmail/validmail/store"
	"github.com/validmail/validmail/store/backend"
	"github.com/validmail/validmail/store/memstore"
	"github.com/validmail/validmail/webhook"
)

// apiGet calls the API with a key and decodes the JSON answer.
func apiGet(t *testing.T, base, path, key string) (int, http.Header, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest("GET", base+path, nil)
	req.Header.Set("x-api-key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	body, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("GET %s: %d, not JSON: %s", path, resp.StatusCode, body)
	}
	return resp.StatusCode, resp.Header, m
}

var (
	checkedRE = regexp.MustCompile(`<input type="checkbox" name="permissions" value="([a-z]+)" checked>`)
	secretRE  = regexp.MustCompile(`id="secret-value" readonly value="([^"]+)"`)
)

// createKey submits the key form as a browser would, with the
// permissions it has checked unless perms names others, and returns the
// new secret.
func (u *user) createKey(name string, perms ...string) string {
	u.t.Helper()
	if len(perms) == 0 {
		for _, m := range checkedRE.FindAllStringSubmatch(u.do("GET", "/dashboard/keys", nil).body, -1) {
			perms = append(perms, m[1])
		}
	}
	a := u.do("POST", "/dashboard/keys", url.Values{"name": {name}, "permissions": perms})
	m := secretRE.FindStringSubmatch(a.body)
	if a.code != http.StatusCreated || m == nil {
		u.t.Fatalf("create key: %d\n%s", a.code, a.body)
	}
	return m[1]
}

// The welcome page's example validates an address that shows a real
// verdict, in a box that wraps, and reads the account with the key.
func TestWelcomeExample(t *testing.T) {
	t.Parallel()
	s := startSite(t, nil)
	page := newUser(t, s.base).signup("welcome-example@example.com").body
	for _, want := range []string{`<pre class="cmd"`, `/validate?email=jane.doe@gmail.com`, `/api/v1/account`} {
		if !strings.Contains(page, want) {
			t.Errorf("the welcome page lacks %q", want)
		}
	}
	if strings.Contains(page, "@example.com\"") {
		t.Errorf("the welcome page still validates a reserved domain:\n%s", page)
	}
	// The example's key can run both requests.
	key := secretRE.FindStringSubmatch(page)
	if key == nil {
		t.Fatal("no key on the welcome page")
	}
	if code, _, m := apiGet(t, s.base, "/api/v1/account", key[1]); code != 200 || m["email"] != "welcome-example@example.com" {
		t.Fatalf("GET /api/v1/account with the first key: %d %v", code, m)
	}
}

// A key made in the console with the form's defaults reads the account;
// the form still lets one choose.
func TestConsoleKeyDefaults(t *testing.T) {
	t.Parallel()
	s := startSite(t, nil)
	u := newUser(t, s.base)
	u.signup("key-defaults@example.com")
	var checked []string
	for _, m := range checkedRE.FindAllStringSubmatch(u.do("GET", "/dashboard/keys", nil).body, -1) {
		checked = append(checked, m[1])
	}
	if !slices.Equal(checked, []string{"validate", "batch", "stats"}) {
		t.Fatalf("checked by default: %v, want validate, batch, stats", checked)
	}
	key := u.createKey("defaults")
	if code, _, m := apiGet(t, s.base, "/api/v1/account", key); code != 200 || m["balance"] != 300.0 {
		t.Fatalf("GET /api/v1/account with a console key: %d %v", code, m)
	}
	narrow := u.createKey("validate only", "validate")
	if code, _, m := apiGet(t, s.base, "/api/v1/account", narrow); code != http.StatusForbidden || m["code"] != "permission_denied" {
		t.Fatalf("GET /api/v1/account with a validate-only key: %d %v", code, m)
	}
	// A console that grants fewer permissions checks only those it grants.
	s2 := startSite(t, nil, func(dc *dashboard.Config, _ string) {
		dc.KeyPermissions = []store.Permission{store.PermValidate, store.PermKeys}
	})
	u2 := newUser(t, s2.base)
	u2.signup("key-defaults-2@example.com")
	checked = nil
	for _, m := range checkedRE.FindAllStringSubmatch(u2.do("GET", "/dashboard/keys", nil).body, -1) {
		checked = append(checked, m[1])
	}
	if !slices.Equal(checked, []string{"validate"}) {
		t.Fatalf("checked by default with validate and keys grantable: %v", checked)
	}
}

var testIDRE = regexp.MustCompile(`/dashboard/webhook\?test=(msg_[A-Z0-9]+)$`)

// The webhook page deletes the endpoint after a confirmation, and its test
// event is a delivery like any other: in the page's log and the API's,
// on every backend.
func TestWebhookDeleteAndTestDelivery(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, open func() *backend.Backend, _ bool) {
		s := startSite(t, open())
		u := newUser(t, s.base)
		u.signup("hook-owner@example.com")
		key := u.createKey("hooks", "webhooks")
		if a := u.do("GET", "/dashboard/webhook/delete", nil); a.code != http.StatusNotFound {
			t.Fatalf("delete page without a webhook: %d", a.code)
		}
		if a := u.do("POST", "/dashboard/webhook", url.Values{"url": {s.receiver.URL + "/hooks"}, "events": {"validation.completed", "batch.completed"}, "enabled": {"1"}}); a.code != http.StatusCreated {
			t.Fatalf("save: %d\n%s", a.code, a.body)
		}

		// The test event: queued, then followed on the page.
		a := u.do("POST", "/dashboard/webhook/test", url.Values{})
		m := testIDRE.FindStringSubmatch(a.hdr.Get("Location"))
		if a.code != http.StatusSeeOther || m == nil {
			t.Fatalf("test event: %d, Location %q", a.code, a.hdr.Get("Location"))
		}
		id := m[1]
		deadline := time.Now().Add(time.Minute)
		var page answer
		for {
			page = u.do("GET", "/dashboard/webhook?test="+id, nil)
			if strings.Contains(page.body, "Delivered: your endpoint answered 204") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the test event was not delivered within a minute:\n%s", page.body)
			}
			if !strings.Contains(page.body, `http-equiv="refresh"`) || !strings.Contains(page.body, `hx-trigger="every 1s"`) {
				t.Fatalf("the page waits for the test event without reloading:\n%s", page.body)
			}
			time.Sleep(20 * time.Millisecond)
		}
		if strings.Contains(page.body, `http-equiv="refresh"`) || strings.Contains(page.body, `hx-trigger="every 1s"`) {
			t.Error("the page keeps reloading after the delivery")
		}
		row := regexp.MustCompile(`<tr class="current">\s*<td data-label="Event"><code>` + id + `</code></td>\s*<td data-label="Type">webhook.test</td>\s*<td data-label="State">delivered</td>`)
		if !row.MatchString(page.body) {
			t.Errorf("the delivery log lacks the test event %s:\n%s", id, page.body)
		}
		if got := s.received(); len(got) != 1 || !strings.Contains(got[0], `"type":"webhook.test"`) {
			t.Errorf("the receiver got %q", got)
		}
		code, _, dl := apiGet(t, s.base, "/api/v1/webhook/deliveries", key)
		ds, _ := dl["deliveries"].([]any)
		if code != 200 || len(ds) != 1 || ds[0].(map[string]any)["event_id"] != id || ds[0].(map[string]any)["state"] != "delivered" {
			t.Fatalf("the API's delivery log: %d %v", code, dl)
		}
		// A test id the log does not list is reported, never waited for.
		if a := u.do("GET", "/dashboard/webhook?test=msg_NOTHERE", nil); a.code != 200 || strings.Contains(a.body, `http-equiv="refresh"`) || !strings.Contains(a.body, "Queued as <code>msg_NOTHERE</code>") {
			t.Errorf("an unknown test id: %d\n%s", a.code, a.body)
		}

		// Delete: a confirmation, then a POST.
		conf := u.do("GET", "/dashboard/webhook/delete", nil)
		if conf.code != 200 || !strings.Contains(conf.body, html.EscapeString(s.receiver.URL+"/hooks")) || !strings.Contains(conf.body, `<form class="row" method="post" action="/dashboard/webhook/delete">`) {
			t.Fatalf("delete confirmation: %d\n%s", conf.code, conf.body)
		}
		if a := u.do("POST", "/dashboard/webhook/delete", url.Values{}, "Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site"); a.code != http.StatusForbidden {
			t.Fatalf("cross-site delete: %d", a.code)
		}
		if code, _, _ := apiGet(t, s.base, "/api/v1/webhook", key); code != 200 {
			t.Fatalf("the refused delete removed the webhook: %d", code)
		}
		a = u.do("POST", "/dashboard/webhook/delete", url.Values{})
		if a.code != http.StatusSeeOther || !strings.HasSuffix(a.hdr.Get("Location"), "/dashboard/webhook") {
			t.Fatalf("delete: %d %v", a.code, a.hdr)
		}
		after := u.do("GET", "/dashboard/webhook", nil).body
		if !strings.Contains(after, "The webhook is deleted") || strings.Contains(after, "/dashboard/webhook/delete") || strings.Contains(after, s.receiver.URL) {
			t.Errorf("the page after deletion:\n%s", after)
		}
		if !strings.Contains(after, "<code>"+id+"</code>") {
			t.Error("the delivery log went with the endpoint")
		}
		if code, _, m := apiGet(t, s.base, "/api/v1/webhook", key); code != http.StatusNotFound || m["code"] != "not_found" {
			t.Fatalf("GET /api/v1/webhook after deletion: %d %v", code, m)
		}
		if a := u.do("POST", "/dashboard/webhook/delete", url.Values{}); a.code != http.StatusNotFound {
			t.Fatalf("deleting twice: %d", a.code)
		}
		if a := newUser(t, s.base).do("POST", "/dashboard/webhook/delete", url.Values{}); a.code != http.StatusUnauthorized {
			t.Fatalf("delete signed out: %d", a.code)
		}
	})
}

// The footer's API reference is a page: every operation of the OpenAPI
// document with its parameters and responses, and the schemas, for
// anyone, without script.
func TestAPIReferencePage(t *testing.T) {
	t.Parallel()
	s := startSite(t, nil)
	anon := newUser(t, s.base)
	login := anon.do("GET", "/dashboard/login", nil).body
	if !strings.Contains(login, `<a href="/dashboard/reference">API reference</a>`) {
		t.Fatalf("the footer does not lead to the reference page:\n%s", login)
	}
	page := anon.do("GET", "/dashboard/reference", nil)
	if page.code != 200 || !strings.HasPrefix(page.hdr.Get("Content-Type"), "text/html") {
		t.Fatalf("reference: %d %s", page.code, page.hdr.Get("Content-Type"))
	}
	if strings.Contains(page.body, "<script>") || strings.Contains(page.body, "https://") && strings.Contains(page.body, "<script src=\"https://") {
		t.Error("the reference page loads a script from elsewhere")
	}
	// Every operation and schema of the document.
	resp, err := http.Get(s.base + "/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths      map[string]map[string]struct{ OperationID string } `json:"paths"`
		Components struct {
			Schemas map[string]any `json:"schemas"`
		} `json:"components"`
	}
	err = json.NewDecoder(resp.Body).Decode(&doc)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for path, ops := range doc.Paths {
		for method, op := range ops {
			n++
			want := `id="op-` + op.OperationID + `"`
			if !strings.Contains(page.body, want) {
				t.Errorf("the reference lacks %s %s (%s)", method, path, want)
			}
		}
	}
	for name := range doc.Components.Schemas {
		if !strings.Contains(page.body, `id="schema-`+name+`"`) {
			t.Errorf("the reference lacks the schema %s", name)
		}
	}
	if n < 15 || strings.Count(page.body, `class="card op"`) != n {
		t.Errorf("%d operations in the document, %d on the page", n, strings.Count(page.body, `class="card op"`))
	}
	for _, want := range []string{
		`<span class="method m-GET">GET</span> <code class="path">/validate</code>`,
		`<td data-label="Name"><code>email</code> <span class="req">required</span></td><td data-label="In">query</td><td data-label="Type">string</td>`,
		`<strong>402</strong>`,
		`<code>application/json</code>: <a href="#schema-ValidationResponse">ValidationResponse</a>`,
		`<code>application/problem&#43;json</code>: <a href="#schema-Problem">Problem</a>`,
		`permission <code>stats</code>`,
		`<dt><code>apiKey</code></dt><dd>The x-api-key header.</dd>`,
		`<code>did_you_mean</code> <span class="req">required</span></td><td data-label="Type">string or null</td>`,
		`<code>insufficient_credits</code>`,
		`<a href="/openapi.json">/openapi.json</a>`,
	} {
		if !strings.Contains(page.body, want) {
			t.Errorf("the reference lacks %s", want)
		}
	}
}

// A document the page cannot read is a configuration error; without one
// the footer links the raw document.
func TestAPIReferenceConfig(t *testing.T) {
	t.Parallel()
	b := memstore.NewBackend()
	st := dashboard.Storage{Accounts: b.Accounts, Passwords: b.Passwords, Sessions: b.Sessions, Tokens: b.Tokens}
	ledger := credits.New(b.Credits, nil)
	q := mustQueue(t, b)
	for _, doc := range []string{`{`, `[1,2]`, `{"paths":` + strings.Repeat("[", 200) + strings.Repeat("]", 200) + `}`} {
		if _, err := dashboard.New(st, ledger, q, &dashboard.Config{OpenAPI: []byte(doc)}); !errors.Is(err, httpapi.ErrConfig) {
			t.Errorf("OpenAPI %.20q: %v, want ErrConfig", doc, err)
		}
	}
	d, err := dashboard.New(st, ledger, q, &dashboard.Config{InsecureCookies: true})
	if err != nil {
		t.Fatal(err)
	}
	rec := serve(d.Handler(), "GET", "/dashboard/login")
	if !strings.Contains(rec, `<a href="/openapi.json">API reference (JSON)</a>`) {
		t.Errorf("without a document the footer should link the raw one:\n%s", rec)
	}
	if rec := serve(d.Handler(), "GET", "/dashboard/reference"); !strings.Contains(rec, "There is no API reference") {
		t.Errorf("the reference page without a document:\n%s", rec)
	}
}

// The demo's JSON answers are shaped as the API's: the result with a
// requestId, and problem documents with the API's codes.
func TestDemoAnswersAsTheAPI(t *testing.T) {
	t.Parallel()
	s := startSite(t, nil, func(dc *dashboard.Config, _ string) { dc.DemoRate = 3 })
	u := newUser(t, s.base)
	key := secretRE.FindStringSubmatch(u.signup("demo-shape@example.com").body)[1]

	get := func(path string, accept string) (int, http.Header, map[string]any) {
		t.Helper()
		a := newUser(t, s.base).do("GET", path, nil, "Accept", accept)
		var m map[string]any
		if err := json.Unmarshal([]byte(a.body), &m); err != nil {
			t.Fatalf("GET %s: %d, not JSON: %s", path, a.code, a.body)
		}
		return a.code, a.hdr, m
	}
	code, hdr, demo := get("/demo?email=jane@good.com", "application/json")
	if code != 200 || hdr.Get("Content-Type") != "application/json" {
		t.Fatalf("demo: %d %s", code, hdr.Get("Content-Type"))
	}
	if id, _ := demo["requestId"].(string); id == "" || id != hdr.Get("X-Request-Id") {
		t.Errorf("demo requestId %q, X-Request-Id %q", id, hdr.Get("X-Request-Id"))
	}
	_, _, api := apiGet(t, s.base, "/validate?email=jane@good.com", key)
	if got, want := shape(demo, ""), shape(api, ""); !slices.Equal(got, want) {
		t.Errorf("demo fields %v\nAPI fields  %v", got, want)
	}
	if demo["meta"].(map[string]any)["source"] != "demo" {
		t.Errorf("demo source %v", demo["meta"])
	}

	// Refusals: problem documents, as the API's.
	code, hdr, p := get("/demo", "application/json")
	wantProblem(t, "no address", code, hdr, p, http.StatusBadRequest, httpapi.CodeMissingEmail)
	_, _, apiP := apiGet(t, s.base, "/validate", key)
	if got, want := shape(p, ""), shape(apiP, ""); !slices.Equal(got, want) {
		t.Errorf("demo problem fields %v\nAPI problem fields  %v", got, want)
	}
	code, hdr, p = get("/demo?email="+strings.Repeat("a", 1100)+"@good.com", "application/problem+json")
	wantProblem(t, "a long address", code, hdr, p, http.StatusBadRequest, httpapi.CodeAddressTooLong)
	for range 3 {
		code, hdr, p = get("/demo?email=jane@good.com", "application/json")
	}
	wantProblem(t, "over the limit", code, hdr, p, http.StatusTooManyRequests, httpapi.CodeRateLimited)
	if hdr.Get("Retry-After") == "" {
		t.Error("429 without Retry-After")
	}
	// The page shows the same JSON.
	if page := newUser(t, s.base).do("GET", "/demo", nil); page.code != 200 || page.hdr.Get("X-Request-Id") == "" {
		t.Errorf("demo page: %d, X-Request-Id %q", page.code, page.hdr.Get("X-Request-Id"))
	}
}

func wantProblem(t *testing.T, what string, code int, hdr http.Header, p map[string]any, status int, c httpapi.Code) {
	t.Helper()
	if code != status || hdr.Get("Content-Type") != "application/problem+json" || p["code"] != string(c) || p["status"] != float64(status) ||
		p["type"] != httpapi.ProblemTypePrefix+string(c) || p["title"] == "" || p["detail"] == "" || p["requestId"] != hdr.Get("X-Request-Id") || p["error"] != nil {
		t.Errorf("%s: %d %s %v", what, code, hdr.Get("Content-Type"), p)
	}
}

// shape lists a JSON object's field paths, sorted.
func shape(m map[string]any, prefix string) []string {
	var out []string
	for k, v := range m {
		out = append(out, prefix+k)
		if sub, ok := v.(map[string]any); ok {
			out = append(out, shape(sub, prefix+k+".")...)
		}
	}
	slices.Sort(out)
	return out
}

// The overview says where the balance came from: signup, grants and
// refunds, less what was spent.
func TestOverviewCreditSources(t *testing.T) {
	t.Parallel()
	b := memstore.NewBackend()
	s := startSite(t, b, func(dc *dashboard.Config, _ string) { dc.BillingURL = "https://pay.example.net/buy" })
	u := newUser(t, s.base)
	u.signup("sources@example.com")
	ctx := context.Background()
	a, err := b.Accounts.GetAccountByEmail(ctx, "sources@example.com")
	if err != nil {
		t.Fatal(err)
	}
	l := credits.New(b.Credits, nil)
	if _, err := l.GrantCredits(ctx, credits.GrantParams{AccountID: a.ID, Credits: 1000, Note: "invoice 12", IdempotencyKey: "g1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Charge(ctx, a.ID, 7, "c1"); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Refund(ctx, a.ID, 2, "r1"); err != nil {
		t.Fatal(err)
	}
	page := u.do("GET", "/dashboard/", nil).body
	for _, want := range []string{`id="balance">1295<`, "300 from signup · 1000 granted · 2 refunded · 7 spent", `href="https://pay.example.net/buy" rel="noopener">Get credits</a>`} {
		if !strings.Contains(page, want) {
			t.Errorf("the overview lacks %q", want)
		}
	}
}

func mustQueue(t *testing.T, b *backend.Backend) *jobs.Queue {
	t.Helper()
	q, err := jobs.NewQueue(b.Jobs, credits.New(b.Credits, nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// serve answers one request without a network and returns the body.
func serve(h http.Handler, method, target string) string {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, target, nil))
	return rec.Body.String()
}

// A console without an outbox sends the test event once, now, and shows
// the attempt on the page it answers.
func TestTestEventWithoutOutbox(t *testing.T) {
	t.Parallel()
	got := make(chan string, 4)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- string(b)
		w.WriteHeader(http.StatusAccepted)
	}))
	defer recv.Close()
	b := memstore.NewBackend()
	client, err := webhook.NewClient(webhook.ClientOptions{Allow: []string{"127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	disp, err := webhook.NewDispatcher(b.Outbox, b.Endpoints, client, nil)
	if err != nil {
		t.Fatal(err)
	}
	d, err := dashboard.New(dashboard.Storage{Accounts: b.Accounts, Passwords: b.Passwords, Sessions: b.Sessions, Tokens: b.Tokens},
		credits.New(b.Credits, nil), mustQueue(t, b), &dashboard.Config{Endpoints: b.Endpoints, Sender: disp, InsecureCookies: true})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(d.Handler())
	defer srv.Close()
	u := newUser(t, srv.URL)
	u.signup("no-outbox@example.com")
	if a := u.do("POST", "/dashboard/webhook", url.Values{"url": {recv.URL}, "events": {"batch.completed"}, "enabled": {"1"}}); a.code != http.StatusCreated {
		t.Fatalf("save: %d\n%s", a.code, a.body)
	}
	a := u.do("POST", "/dashboard/webhook/test", url.Values{})
	if a.code != http.StatusOK || !strings.Contains(a.body, "Delivered: your endpoint answered 202") {
		t.Fatalf("test event: %d\n%s", a.code, a.body)
	}
	if body := <-got; !strings.Contains(body, `"type":"webhook.test"`) {
		t.Fatalf("the receiver got %s", body)
	}
}
