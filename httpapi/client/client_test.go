package client_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/emailcheck/dnstest"
	"github.com/validmail/validmail/httpapi/client"
	"github.com/validmail/validmail/httpapi/service"
	"github.com/validmail/validmail/store"
	"github.com/validmail/validmail/store/memstore"
)

// deployment is the service on memory behind a loopback server, with one
// account holding credits.
type deployment struct {
	srv    *httptest.Server
	svc    *service.Service
	key    string
	acctID string
}

func deploy(t *testing.T, wrap func(http.Handler) http.Handler) *deployment {
	t.Helper()
	dns := dnstest.Start(t, dnstest.Zone{"gmail.com": {MX: []dnstest.MX{{Pref: 5, Host: "gmail-smtp-in.l.google.com"}}}}, nil)
	svc, err := service.New(memstore.NewBackend(), &service.Config{Checks: &emailcheck.Config{Nameservers: []string{dns.Addr()}}})
	if err != nil {
		t.Fatal(err)
	}
	key := store.NewSecret()
	acct, _, err := service.Bootstrap(t.Context(), svc.Backend().Accounts, service.BootstrapParams{Email: "client@example.org", Key: key, Credits: 100_000})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); svc.Run(ctx) }()
	// What the service answers is checked against its document; what a
	// test's wrapper makes of it is the test's own.
	h := checker(t, svc).Handler(t, svc.Mux())
	if wrap != nil {
		h = wrap(h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(func() { srv.Close(); cancel(); <-done })
	return &deployment{srv: srv, svc: svc, key: key, acctID: acct.ID}
}

func (d *deployment) balance(t *testing.T) int64 {
	t.Helper()
	n, err := d.svc.Ledger().Balance(t.Context(), d.acctID)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestValidateAndErrors(t *testing.T) {
	t.Parallel()
	d := deploy(t, nil)
	c, err := client.New(d.srv.URL, d.key, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Validate(t.Context(), "jane@gmail.com")
	if err != nil || res.Confidence.Status != emailcheck.StatusLikely {
		t.Fatalf("Validate: %+v, %v", res.Confidence, err)
	}
	bad, _ := client.New(d.srv.URL, store.NewSecret(), nil)
	_, err = bad.Validate(t.Context(), "jane@gmail.com")
	var apiErr *client.Error
	if !errors.As(err, &apiErr) || apiErr.Code != "invalid_api_key" || apiErr.Status != 401 {
		t.Fatalf("unknown key: %v", err)
	}
	acct, err := c.Account(t.Context())
	if err != nil || acct.Email != "client@example.org" {
		t.Fatalf("Account: %+v, %v", acct, err)
	}
}

// ValidateList splits any number of addresses into batches and yields the
// results in input order.
func TestValidateList(t *testing.T) {
	t.Parallel()
	d := deploy(t, nil)
	c, _ := client.New(d.srv.URL, d.key, nil)
	emails := make([]string, 2500)
	for i := range emails {
		emails[i] = fmt.Sprintf("user%d@gmail.com", i)
		if i%7 == 0 {
			emails[i] = fmt.Sprintf("broken-%d", i)
		}
	}
	before := d.balance(t)
	i := 0
	for res, err := range c.ValidateList(t.Context(), slices.Values(emails)) {
		if err != nil {
			t.Fatal(err)
		}
		if res.Email != emails[i] {
			t.Fatalf("result %d is for %s, want %s", i, res.Email, emails[i])
		}
		i++
	}
	if i != len(emails) {
		t.Fatalf("%d results for %d addresses", i, len(emails))
	}
	if spent := before - d.balance(t); spent != int64(len(emails)) {
		t.Fatalf("charged %d credits for %d addresses", spent, len(emails))
	}
}

// resetOnce lets the first batch submission reach the server, then loses
// its answer as a reset connection would.
type resetOnce struct {
	next  http.RoundTripper
	fired atomic.Bool
}

func (r *resetOnce) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.next.RoundTrip(req)
	if err == nil && req.Method == "POST" && strings.HasSuffix(req.URL.Path, "/validate/async") && r.fired.CompareAndSwap(false, true) {
		resp.Body.Close()
		return nil, errors.New("read tcp: connection reset by peer")
	}
	return resp, err
}

// A submission whose answer was lost is retried under the same
// Idempotency-Key: the batch is charged once.
func TestRetryAfterLostAnswerChargesOnce(t *testing.T) {
	t.Parallel()
	d := deploy(t, nil)
	rt := &resetOnce{next: http.DefaultTransport}
	c, _ := client.New(d.srv.URL, d.key, &client.Options{HTTPClient: &http.Client{Transport: rt}})
	before := d.balance(t)
	n := 0
	for _, err := range c.ValidateList(t.Context(), slices.Values([]string{"a@gmail.com", "b@gmail.com", "c@gmail.com"})) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if !rt.fired.Load() || n != 3 {
		t.Fatalf("reset fired %v, %d results", rt.fired.Load(), n)
	}
	if spent := before - d.balance(t); spent != 3 {
		t.Fatalf("charged %d credits for 3 addresses across a retry, want 3", spent)
	}
}

// A 429 is retried after its Retry-After.
func TestRetryAfter429(t *testing.T) {
	t.Parallel()
	var refused atomic.Int32
	d := deploy(t, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if refused.Add(1) == 1 {
				w.Header().Set("Retry-After", "1")
				w.Header().Set("Content-Type", "application/problem+json")
				w.WriteHeader(http.StatusTooManyRequests)
				fmt.Fprint(w, `{"code":"rate_limited","title":"Rate limited","detail":"slow down"}`)
				return
			}
			next.ServeHTTP(w, r)
		})
	})
	c, _ := client.New(d.srv.URL, d.key, nil)
	start := time.Now()
	if _, err := c.Validate(t.Context(), "jane@gmail.com"); err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(start); waited < 900*time.Millisecond {
		t.Fatalf("retried after %v, before the 1 s Retry-After", waited)
	}
	none, _ := client.New(d.srv.URL, d.key, &client.Options{MaxRetries: -1})
	refused.Store(0)
	var apiErr *client.Error
	if _, err := none.Validate(t.Context(), "jane@gmail.com"); !errors.As(err, &apiErr) || apiErr.Code != "rate_limited" || apiErr.RetryAfter != time.Second {
		t.Fatalf("without retries: %v", err)
	}
}

// BenchmarkValidateList10k validates 10,000 addresses end to end against
// the service on memory over loopback.
func BenchmarkValidateList10k(b *testing.B) {
	dns := dnstest.Start(b, dnstest.Zone{"gmail.com": {MX: []dnstest.MX{{Pref: 5, Host: "gmail-smtp-in.l.google.com"}}}}, nil)
	svc, err := service.New(memstore.NewBackend(), &service.Config{Checks: &emailcheck.Config{Nameservers: []string{dns.Addr()}}})
	if err != nil {
		b.Fatal(err)
	}
	key := store.NewSecret()
	if _, _, err := service.Bootstrap(b.Context(), svc.Backend().Accounts, service.BootstrapParams{Email: "bench@example.org", Key: key, Credits: 1 << 40}); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); svc.Run(ctx) }()
	srv := httptest.NewServer(svc.Mux())
	defer func() { srv.Close(); cancel(); <-done }()
	c, _ := client.New(srv.URL, key, nil)
	emails := make([]string, 10_000)
	for i := range emails {
		emails[i] = fmt.Sprintf("user%d@gmail.com", i)
	}
	for b.Loop() {
		n := 0
		for _, err := range c.ValidateList(b.Context(), slices.Values(emails)) {
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		if n != len(emails) {
			b.Fatalf("%d results", n)
		}
	}
	b.ReportMetric(float64(len(emails)*b.N)/b.Elapsed().Seconds(), "addresses/s")
}
