package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/emailcheck/dnstest"
	"github.com/validmail/validmail/httpapi"
	"github.com/validmail/validmail/httpapi/internal/apicheck"
	"github.com/validmail/validmail/jobs"
	"github.com/validmail/validmail/jobs/jobsdriver"
	"github.com/validmail/validmail/store"
	"github.com/validmail/validmail/store/memstore"
	"github.com/validmail/validmail/store/ratelimit"
	"github.com/validmail/validmail/webhook"
	"github.com/validmail/validmail/webhook/jobevents"
	"github.com/validmail/validmail/webhook/webhookmetrics"
)

// zone is the DNS the tests' validator sees.
func zone() dnstest.Zone {
	return dnstest.Zone{
		"good.com":     {MX: []dnstest.MX{{Pref: 10, Host: "mx1.good.com"}}},
		"other.com":    {MX: []dnstest.MX{{Pref: 10, Host: "mx.other.com"}}},
		"servfail.com": {Rcode: dns.RcodeServerFailure},
	}
}

// options adjust [setup].
type options struct {
	credits   int64 // signup credits; 0 means 300, negative none
	limit     ratelimit.Limit
	limiter   ratelimit.Limiter
	maxBody   int64
	accounts  func(store.Accounts) store.Accounts // wraps the store
	ledger    func(credits.Store) credits.Store
	driver    func(*memstore.Store) jobsdriver.Driver // wraps the queue's driver
	validator jobs.Validator                          // default: the dnstest-backed validator
	noLog     bool
	// webhooks serves the webhook routes over the memory store, with a
	// dispatcher whose client reaches loopback only when loopback is set.
	webhooks bool
	loopback bool
	// adminToken serves the operator's routes with this token.
	adminToken string
	// configure, when set, changes the handler's configuration last.
	configure func(*httpapi.Config)
	// sellerURL, when set, sells credit packs through Stripe's API there.
	sellerURL string
}

// fixture is a handler over memstore with one account and a key carrying
// every permission.
type fixture struct {
	t      *testing.T
	h      *httpapi.Handler
	st     *memstore.Store
	ledger *credits.Ledger
	queue  *jobs.Queue
	v      *emailcheck.Validator
	dns    *dnstest.Server
	reg    *prometheus.Registry
	logs   *syncBuffer
	acct   store.Account
	key    string
	// api checks responses against the served document; checked is h
	// behind it, what tests send their requests to.
	api     *apicheck.Checker
	checked http.Handler

	// Set with options.webhooks.
	hooks   *memstore.Webhooks
	disp    *webhook.Dispatcher
	events  *jobevents.Builder
	whStats *webhookmetrics.Metrics
}

func setup(t testing.TB, o *options) *fixture {
	t.Helper()
	if o == nil {
		o = &options{}
	}
	srv := dnstest.Start(t, zone(), nil)
	v, err := emailcheck.New(&emailcheck.Config{Nameservers: []string{srv.Addr()}, QueryTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { v.Close() })
	st := memstore.New()
	var cs credits.Store = st
	if o.ledger != nil {
		cs = o.ledger(st)
	}
	ledger := credits.New(cs, nil)
	var d jobsdriver.Driver = st.Backend().Jobs
	if o.driver != nil {
		d = o.driver(st)
	}
	q, err := jobs.NewQueue(d, ledger, nil)
	if err != nil {
		t.Fatal(err)
	}
	var accts store.Accounts = st
	if o.accounts != nil {
		accts = o.accounts(st)
	}
	limit := o.limit
	if limit == (ratelimit.Limit{}) {
		limit = ratelimit.Limit{PerSecond: -1}
	}
	f := &fixture{st: st, ledger: ledger, queue: q, v: v, dns: srv, reg: prometheus.NewRegistry(), logs: &syncBuffer{}}
	if tt, ok := t.(*testing.T); ok {
		f.t = tt
	}
	var hv jobs.Validator = v
	if o.validator != nil {
		hv = o.validator
	}
	cfg := httpapi.Config{
		Usage:        st,
		Registerer:   f.reg,
		RateLimit:    limit,
		RateLimiter:  o.limiter,
		MaxBodyBytes: o.maxBody,
		AdminToken:   o.adminToken,
	}
	if !o.noLog {
		cfg.Logger = slog.New(slog.NewJSONHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	if o.webhooks {
		f.setupWebhooks(t, o.loopback)
		cfg.Webhooks, cfg.WebhookOutbox, cfg.WebhookSender, cfg.EndpointChanged = f.hooks, f.hooks, f.disp, f.events.Forget
	}
	if o.sellerURL != "" {
		cfg.Seller = newSeller(t, f, o.sellerURL)
		cfg.CheckoutSuccessURL = "https://console.example/billing?session={CHECKOUT_SESSION_ID}"
		cfg.CheckoutCancelURL = "https://console.example/billing"
	}
	if o.configure != nil {
		o.configure(&cfg)
	}
	f.h, err = httpapi.NewHandler(hv, ledger, q, accts, &cfg)
	if err != nil {
		t.Fatal(err)
	}
	if f.api, err = apiSuite.New(f.h.OpenAPI()); err != nil {
		t.Fatal(err)
	}
	f.checked = f.api.Handler(t, f.h)
	f.acct, f.key = f.newAccount(t, "owner@good.com", o.credits, store.AllPermissions())
	return f
}

// newAccount creates an account with a key carrying perms.
func (f *fixture) newAccount(t testing.TB, email string, signup int64, perms []store.Permission) (store.Account, string) {
	t.Helper()
	ctx := context.Background()
	a, err := f.st.CreateAccount(ctx, store.CreateAccountParams{Email: email, SignupCredits: signup})
	if err != nil {
		t.Fatal(err)
	}
	return a, f.newKey(t, a.ID, perms)
}

func (f *fixture) newKey(t testing.TB, account string, perms []store.Permission) string {
	t.Helper()
	_, secret, err := f.st.CreateKey(context.Background(), store.CreateKeyParams{AccountID: account, Permissions: perms})
	if err != nil {
		t.Fatal(err)
	}
	return secret
}

func (f *fixture) balance(t testing.TB, account string) int64 {
	t.Helper()
	n, err := f.ledger.Balance(context.Background(), account)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// setupWebhooks wires the memory store's outbox and endpoints, a
// dispatcher observed by the webhook metrics, and the job-event source,
// the way a service binary does.
func (f *fixture) setupWebhooks(t testing.TB, loopback bool) {
	t.Helper()
	f.hooks = f.st.Backend().Outbox.(*memstore.Webhooks)
	var opts webhook.ClientOptions
	if loopback {
		opts.Allow = []string{"127.0.0.1/32"}
	}
	client, err := webhook.NewClient(opts)
	if err != nil {
		t.Fatal(err)
	}
	if f.whStats, err = webhookmetrics.New(f.reg, f.hooks, nil); err != nil {
		t.Fatal(err)
	}
	f.disp, err = webhook.NewDispatcher(f.hooks, f.hooks, client, &webhook.Config{
		Timeout:  5 * time.Second,
		Observer: f.whStats,
	})
	if err != nil {
		t.Fatal(err)
	}
	if f.events, err = jobevents.New(f.hooks, nil); err != nil {
		t.Fatal(err)
	}
}

// runDispatcher delivers the outbox until the test ends.
func (f *fixture) runDispatcher(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); f.disp.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

// runPool runs workers until the test ends. With webhooks, completions
// write their events and wake the dispatcher. A job whose domain gets no
// DNS verdict (servfail.com) is tried again 10 ms later rather than after
// DefaultUnknownBackoff's 10 s and 30 s, its verdict the same each time.
func (f *fixture) runPool(t *testing.T) {
	cfg := &jobs.PoolConfig{
		Workers: 4, PollInterval: 5 * time.Millisecond,
		UnknownBackoff: func(int) time.Duration { return 10 * time.Millisecond },
	}
	if f.events != nil {
		cfg.NewEvents = f.events.NewEvents
		cfg.OnComplete = func(context.Context, jobs.Job) { f.disp.Notify() }
	}
	p, err := jobs.NewPool(f.queue, f.v, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); p.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

// response is a recorded response.
type response struct {
	Code   int
	Header http.Header
	Body   []byte
}

// JSON decodes the body into a map.
func (r *response) JSON(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("body %q: %v", r.Body, err)
	}
	return m
}

// req describes a request for [fixture.do].
type req struct {
	method, target, key, body string
	header                    map[string]string
	// handler serves the request instead of f.h, behind the OpenAPI
	// check; unless mounted is set: then it is a mux that mounts
	// f.checked under a prefix, and the check is inside it.
	handler http.Handler
	mounted bool
}

// do serves one request and checks what every response must satisfy: the
// OpenAPI document (f.checked, or rq.handler when it serves f.checked),
// the request id in the header and the body, the media type of errors.
func (f *fixture) do(t testing.TB, rq req) *response {
	t.Helper()
	var body io.Reader
	if rq.body != "" {
		body = strings.NewReader(rq.body)
	}
	r := httptest.NewRequest(rq.method, rq.target, body)
	if rq.key != "" {
		r.Header.Set("x-api-key", rq.key)
	}
	if rq.body != "" && r.Header.Get("Content-Type") == "" {
		r.Header.Set("Content-Type", "application/json")
	}
	for k, v := range rq.header {
		if v == "" {
			r.Header.Del(k)
		} else {
			r.Header.Set(k, v)
		}
	}
	h := f.checked
	switch {
	case rq.mounted:
		h = rq.handler
	case rq.handler != nil:
		h = f.api.Handler(t, rq.handler)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	resp := &response{Code: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes()}
	checkCommon(t, resp)
	return resp
}

// checkCommon checks the request id and the problem media type.
func checkCommon(t testing.TB, resp *response) {
	t.Helper()
	rid := resp.Header.Get("X-Request-Id")
	if len(rid) != 36 {
		t.Fatalf("X-Request-Id %q", rid)
	}
	if resp.Code >= 400 && resp.Header.Get("Content-Type") != "application/problem+json" {
		t.Fatalf("status %d with Content-Type %q", resp.Code, resp.Header.Get("Content-Type"))
	}
	if len(resp.Body) == 0 {
		return
	}
	if ct := resp.Header.Get("Content-Type"); strings.HasPrefix(ct, "text/csv") || strings.HasPrefix(ct, "application/x-ndjson") || ct == httpapi.XLSXContentType {
		return // an export: the request id is in the header only
	}
	var m map[string]any
	if err := json.Unmarshal(resp.Body, &m); err != nil {
		t.Fatalf("body %q: %v", resp.Body, err)
	}
	if _, ok := m["openapi"]; ok {
		return
	}
	if m["requestId"] != rid {
		t.Fatalf("requestId %v, X-Request-Id %q", m["requestId"], rid)
	}
}

// wantProblem checks a problem response's status and code.
func wantProblem(t testing.TB, resp *response, status int, code string) map[string]any {
	t.Helper()
	if resp.Code != status {
		t.Fatalf("status %d, want %d; body %s", resp.Code, status, resp.Body)
	}
	m := resp.JSON(t)
	if m["code"] != code || m["status"] != float64(status) || m["type"] != httpapi.ProblemTypePrefix+code {
		t.Fatalf("problem %s, want code %s", resp.Body, code)
	}
	return m
}

// keysOf returns the sorted keys of m, joined by commas.
func keysOf(m map[string]any) string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sortStrings(ks)
	return strings.Join(ks, ",")
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// waitCompleted waits until the batch id of f's key is completed.
func waitCompleted(t *testing.T, f *fixture, id string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for f.do(t, req{method: "GET", target: "/api/v1/batches/" + id, key: f.key}).JSON(t)["state"] != "completed" {
		if time.Now().After(deadline) {
			t.Fatal("the batch did not complete within a minute")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
