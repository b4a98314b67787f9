package service_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"

	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/emailcheck/dnstest"
	"github.com/validmail/validmail/httpapi"
	"github.com/validmail/validmail/httpapi/dashboard"
	"github.com/validmail/validmail/httpapi/service"
	"github.com/validmail/validmail/plans"
	"github.com/validmail/validmail/store"
	"github.com/validmail/validmail/store/backend"
	"github.com/validmail/validmail/store/memstore"
	"github.com/validmail/validmail/store/ratelimit"
	"github.com/validmail/validmail/store/storeurl"
)

// countingProber answers "exists" for every mailbox, dialling nothing, and
// counts the probes.
type countingProber struct{ calls atomic.Int32 }

func (p *countingProber) ProbeMailbox(context.Context, emailcheck.ProbeRequest) emailcheck.SMTPResult {
	p.calls.Add(1)
	no := false
	return emailcheck.SMTPResult{Checked: true, Mailbox: emailcheck.MailboxExists, CatchAll: &no}
}

// probingService returns a service on b whose validator probes with p, a
// domain shop.io that is LIKELY, and a dashboard.
func probingService(t *testing.T, b *backend.Backend, p emailcheck.MailboxProber, limit ratelimit.Limit) *service.Service {
	t.Helper()
	dns := dnstest.Start(t, dnstest.Zone{"shop.io": {MX: []dnstest.MX{{Pref: 10, Host: "mx.shop.io", Addrs: []string{"192.0.2.25"}}}}}, nil)
	svc, err := service.New(b, &service.Config{
		// 192.0.2.25 is a documentation address: the prober here dials
		// nothing.
		Checks:     &emailcheck.Config{Nameservers: []string{dns.Addr()}, AllowPrivateMX: true, Prober: p},
		Workers:    -1,
		ProbeLimit: limit,
		Dashboard:  &dashboard.Config{InsecureCookies: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	return svc
}

// smtpOf serves req on svc and returns the result's smtp object.
func smtpOf(t *testing.T, svc *service.Service, req *http.Request) emailcheck.SMTPResult {
	t.Helper()
	rec := httptest.NewRecorder()
	apiMux(t, svc).ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("%s: %d %s", req.URL, rec.Code, rec.Body)
	}
	var res emailcheck.Result
	if err := json.Unmarshal(rec.Body.Bytes(), &res); err != nil || res.SMTP == nil {
		t.Fatalf("%s: %v, %s", req.URL, err, rec.Body)
	}
	return *res.SMTP
}

// The anonymous demo never probes a mailbox; an API call does.
func TestDemoNeverProbes(t *testing.T) {
	t.Parallel()
	p := &countingProber{}
	b := memstore.NewBackend()
	svc := probingService(t, b, p, ratelimit.Limit{})
	for _, email := range []string{"jane@shop.io", "postmaster@shop.io", "x@shop.io"} {
		req := httptest.NewRequest("GET", "/demo?email="+url.QueryEscape(email), nil)
		req.Header.Set("Accept", "application/json")
		if r := smtpOf(t, svc, req); r.Checked {
			t.Errorf("demo %s: smtp %+v, want not probed", email, r)
		}
	}
	if n := p.calls.Load(); n != 0 {
		t.Fatalf("the demo probed %d times", n)
	}
	_, key, err := service.Bootstrap(context.Background(), b.Accounts, service.BootstrapParams{Email: "ops@example.org"})
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest("GET", "/validate?email=jane@shop.io", nil)
	req.Header.Set("x-api-key", key)
	if r := smtpOf(t, svc, req); !r.Checked || p.calls.Load() != 1 {
		t.Fatalf("API call: smtp %+v after %d probes, want probed once", r, p.calls.Load())
	}
}

// Each account has its own budget of probes, shared by every instance on
// a shared backend: an address over budget keeps its DNS verdict.
func TestProbeBudgetPerAccount(t *testing.T) {
	t.Parallel()
	targets := []struct{ name, url string }{{"memory", "memory"}}
	if u := os.Getenv("VALIDMAIL_TEST_POSTGRES"); u != "" {
		targets = append(targets, struct{ name, url string }{"postgres", u})
	}
	if u := os.Getenv("VALIDMAIL_TEST_REDIS"); u != "" {
		targets = append(targets, struct{ name, url string }{"redis", u})
	}
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			u := tg.url
			ns := "probe_" + strings.ReplaceAll(uuid.NewString()[:8], "-", "")
			switch tg.name {
			case "postgres":
				u += sep(u) + "schema=" + ns
				t.Cleanup(func() { dropSchema(t, tg.url, ns) })
			case "redis":
				u += sep(u) + "prefix=" + ns
			}
			b, err := storeurl.Open(ctx, u, &storeurl.Options{Init: true})
			if err != nil {
				t.Fatal(err)
			}
			p := &countingProber{}
			limit := ratelimit.Limit{PerSecond: 0.001, Burst: 3}
			first := probingService(t, b, p, limit)
			instances := []*service.Service{first}
			if b.Limiter != nil {
				// A second instance on the same store shares the budget.
				instances = append(instances, probingService(t, b, p, limit))
			}
			keys := map[string]string{}
			for _, email := range []string{"a@example.org", "b@example.org"} {
				_, key, err := service.Bootstrap(ctx, b.Accounts, service.BootstrapParams{Email: email, Credits: 100})
				if err != nil {
					t.Fatal(err)
				}
				keys[email] = key
			}
			probed := map[string]int{}
			for email, key := range keys {
				for i := range 8 {
					req := httptest.NewRequest("GET", "/validate?email=user"+string(rune('a'+i))+"@shop.io", nil)
					req.Header.Set("x-api-key", key)
					r := smtpOf(t, instances[i%len(instances)], req)
					if r.Checked {
						probed[email]++
					} else if r.Detail != "not probed: the account's probe budget is spent" {
						t.Errorf("over budget: %+v", r)
					}
				}
			}
			if probed["a@example.org"] != 3 || probed["b@example.org"] != 3 || p.calls.Load() != 6 {
				t.Fatalf("probed %v in %d instances (%d probes); want 3 an account", probed, len(instances), p.calls.Load())
			}
		})
	}
}

func TestProbeLimitChecked(t *testing.T) {
	t.Parallel()
	_, err := service.New(memstore.NewBackend(), &service.Config{
		Checks:     &emailcheck.Config{Prober: &countingProber{}},
		Workers:    -1,
		ProbeLimit: ratelimit.Limit{PerSecond: 1, Burst: 0},
	})
	if !errors.Is(err, httpapi.ErrConfig) {
		t.Fatalf("a probe limit without a burst: %v, want ErrConfig", err)
	}
}

// An account's plan sets its probe budget: an account on a plan of 5
// probes gets 5, one on the default plan the service's 2.
func TestProbeBudgetByPlan(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := memstore.NewBackend()
	catalog, err := plans.New("free", []plans.Plan{{Name: "prober", ProbeBudget: 5, ProbeRatePerSecond: 0.001}})
	if err != nil {
		t.Fatal(err)
	}
	dns := dnstest.Start(t, dnstest.Zone{"shop.io": {MX: []dnstest.MX{{Pref: 10, Host: "mx.shop.io", Addrs: []string{"192.0.2.25"}}}}}, nil)
	p := &countingProber{}
	svc, err := service.New(b, &service.Config{
		Checks:     &emailcheck.Config{Nameservers: []string{dns.Addr()}, AllowPrivateMX: true, Prober: p},
		Workers:    -1,
		ProbeLimit: ratelimit.Limit{PerSecond: 0.001, Burst: 2},
		API:        httpapi.Config{Plans: catalog},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	probed := map[string]int{}
	for _, email := range []string{"plan@example.org", "default@example.org"} {
		a, key, err := service.Bootstrap(ctx, b.Accounts, service.BootstrapParams{Email: email, Credits: 100})
		if err != nil {
			t.Fatal(err)
		}
		if email == "plan@example.org" {
			if err := b.Accounts.(store.PlanSetter).SetPlan(ctx, a.ID, "prober"); err != nil {
				t.Fatal(err)
			}
		}
		for i := range 8 {
			req := httptest.NewRequest("GET", "/validate?email=user"+string(rune('a'+i))+"@shop.io", nil)
			req.Header.Set("x-api-key", key)
			if smtpOf(t, svc, req).Checked {
				probed[email]++
			}
		}
	}
	if probed["plan@example.org"] != 5 || probed["default@example.org"] != 2 {
		t.Fatalf("probed %v; want 5 on the plan, 2 on the default", probed)
	}
}
