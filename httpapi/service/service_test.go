package service_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/emailcheck/dnstest"
	"github.com/validmail/validmail/httpapi"
	"github.com/validmail/validmail/httpapi/service"
	"github.com/validmail/validmail/jobs"
	"github.com/validmail/validmail/store/backend"
	"github.com/validmail/validmail/store/memstore"
)

// gate is a validator that holds every validation until released.
type gate struct {
	started chan string
	release chan struct{}
}

func (g *gate) Validate(ctx context.Context, email string, _ ...emailcheck.CallOption) (emailcheck.Result, error) {
	g.started <- email
	<-g.release
	r := emailcheck.Result{Email: email}
	r.Confidence.Status = emailcheck.StatusLikely
	r.Confidence.Score = 90
	r.Confidence.AliasStatus = emailcheck.AliasMaybeNot
	r.Reason = emailcheck.ReasonValid
	return r, nil
}

// events records what happened, in order.
type events struct {
	mu   sync.Mutex
	list []string
}

func (e *events) add(s string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.list = append(e.list, s)
}

func (e *events) get() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.list...)
}

// When the context ends, the worker finishes the validation in flight and
// completes its job before the backend is closed, and Serve returns nil.
func TestServeDrainsBeforeClosing(t *testing.T) {
	t.Parallel()
	b := memstore.NewBackend()
	var ev events
	b.OnClose(func() error { ev.add("backend closed"); return nil })
	g := &gate{started: make(chan string, 1), release: make(chan struct{})}
	svc, err := service.New(b, &service.Config{
		Validator: g, Workers: 1,
		Pool: jobs.PoolConfig{OnComplete: func(context.Context, jobs.Job) { ev.add("job completed") }},
	})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- svc.Serve(ctx, ln) }()

	ids, err := svc.Queue().Enqueue(ctx, "acct", []string{"a@example.org"})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-g.started:
	case <-time.After(10 * time.Second):
		t.Fatal("the worker did not start the job")
	}
	cancel()
	select {
	case err := <-served:
		t.Fatalf("Serve returned (%v) with a validation in flight", err)
	case <-time.After(100 * time.Millisecond):
	}
	if got := ev.get(); len(got) != 0 {
		t.Fatalf("before the validation ended: %v", got)
	}
	close(g.release)
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return")
	}
	if got := ev.get(); len(got) != 2 || got[0] != "job completed" || got[1] != "backend closed" {
		t.Fatalf("order %v, want the job completed, then the backend closed", got)
	}
	j, err := b.Jobs.Get(context.Background(), "acct", ids[0])
	if err != nil || j.State != jobs.StateCompleted {
		t.Fatalf("job after shutdown: %+v, %v", j, err)
	}
	if _, err := http.Get("http://" + ln.Addr().String() + "/healthz"); err == nil {
		t.Error("the listener still answers after Serve returned")
	}
}

// Middleware wraps the API, the first outermost; the host's routes and
// /healthz are not wrapped; /metrics serves the Gatherer.
func TestMuxAndMiddleware(t *testing.T) {
	t.Parallel()
	var order []string
	var mu sync.Mutex
	mw := func(name string) func(http.Handler) http.Handler {
		return func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				order = append(order, name)
				mu.Unlock()
				next.ServeHTTP(w, r)
			})
		}
	}
	reg := prometheus.NewRegistry()
	svc, err := service.New(memstore.NewBackend(), &service.Config{
		Validator: &gate{}, Workers: -1,
		Middleware: []func(http.Handler) http.Handler{mw("outer"), nil, mw("inner")},
		Registerer: reg, Gatherer: reg,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	if svc.Pool() != nil {
		t.Error("Workers < 0 built a pool")
	}
	var hits atomic.Int32
	svc.Mux().HandleFunc("GET /mine", func(http.ResponseWriter, *http.Request) { hits.Add(1) })

	get := func(path string) int {
		rec := httptest.NewRecorder()
		apiMux(t, svc).ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		return rec.Code
	}
	if code := get("/validate?email=a@example.org"); code != http.StatusUnauthorized {
		t.Errorf("GET /validate without a key: %d", code)
	}
	if len(order) != 2 || order[0] != "outer" || order[1] != "inner" {
		t.Errorf("middleware order %v, want [outer inner]", order)
	}
	order = nil
	if get("/mine") != 200 || hits.Load() != 1 || get("/healthz") != 200 || len(order) != 0 {
		t.Errorf("the host's route or /healthz went through the API middleware: %v", order)
	}
	if code := get("/metrics"); code != 200 {
		t.Errorf("GET /metrics: %d", code)
	}
}

func TestNewChecksTheBackend(t *testing.T) {
	t.Parallel()
	b := memstore.NewBackend()
	b.Outbox = nil
	if _, err := service.New(b, nil); !errors.Is(err, httpapi.ErrConfig) || !errors.Is(err, backend.ErrIncomplete) {
		t.Fatalf("New with no Outbox: %v", err)
	}
	if _, err := service.New(nil, nil); !errors.Is(err, httpapi.ErrConfig) {
		t.Fatalf("New with no Backend: %v", err)
	}
}

// Run, for hosts that serve the handler themselves, stops on cancel and
// closes the backend once, even when Close is called again.
func TestRunAndClose(t *testing.T) {
	t.Parallel()
	b := memstore.NewBackend()
	var closes atomic.Int32
	b.OnClose(func() error { closes.Add(1); return nil })
	svc, err := service.New(b, &service.Config{Validator: &gate{}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx) }()
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := svc.Close(); err != nil || closes.Load() != 1 {
		t.Fatalf("Close after Run: %v, backend closed %d times", err, closes.Load())
	}
}

// /readyz answers 200 while the backend answers, whatever the DNS does:
// every instance shares the resolver, so a DNS outage or a lying resolver
// is reported in "dns:" lines, not by failing readiness (unless the
// operator asks for that); a validation then answers 200 UNKNOWN.
func TestReadyz(t *testing.T) {
	t.Parallel()
	for _, needsDNS := range []bool{false, true} {
		t.Run(fmt.Sprintf("ReadinessNeedsDNS=%v", needsDNS), func(t *testing.T) {
			t.Parallel()
			dns := dnstest.Start(t, dnstest.Zone{}, nil)
			b := memstore.NewBackend()
			svc, err := service.New(b, &service.Config{
				// A loaded machine may answer a loopback question late: an
				// unanswered trust check would say nothing of the lie.
				Checks:            &emailcheck.Config{Nameservers: []string{dns.Addr()}, QueryTimeout: 2 * time.Second, TrustCheckInterval: time.Millisecond},
				ReadinessNeedsDNS: needsDNS,
			})
			if err != nil {
				t.Fatal(err)
			}
			defer svc.Close()
			_, key, err := service.Bootstrap(context.Background(), b.Accounts, service.BootstrapParams{Email: "ops@example.org"})
			if err != nil {
				t.Fatal(err)
			}
			get := func(target string) (int, string) {
				rec := httptest.NewRecorder()
				req := httptest.NewRequest("GET", target, nil)
				req.Header.Set("x-api-key", key)
				apiMux(t, svc).ServeHTTP(rec, req)
				return rec.Code, rec.Body.String()
			}
			if code, body := get("/readyz"); code != 200 || body != "ready\n" {
				t.Fatalf("with DNS up: %d %q", code, body)
			}
			want := 200
			if needsDNS {
				want = 503
			}
			dns.SetLying(true)
			if code, body := get("/validate?email=jane.doe@gmail.com"); code != 200 || !strings.Contains(body, `"UNKNOWN"`) || !strings.Contains(body, `"dns_untrusted"`) {
				t.Fatalf("GET /validate with a lying resolver: %d %s; want 200 UNKNOWN dns_untrusted", code, body)
			}
			// The verdict of the first check stands for its interval
			// (a millisecond here): asked again until a check sees the lie.
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
				code, body := get("/readyz")
				if code == want && strings.Contains(body, "dns: the nameservers deny names that exist") {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("with a lying resolver: %d %q, want %d and a dns: line", code, body, want)
				}
			}
			dns.Close()
			if code, body := get("/readyz"); code != want || !strings.Contains(body, "dns: no nameserver answers") {
				t.Fatalf("with DNS down: %d %q, want %d and a dns: line", code, body, want)
			}
			if code, body := get("/validate?email=jane@other.com"); code != 200 || !strings.Contains(body, `"UNKNOWN"`) {
				t.Fatalf("GET /validate with DNS down: %d %s; want 200 UNKNOWN", code, body)
			}
		})
	}
}

// The operator's metrics: DNS cache and queries, queue depth, workers,
// refunds; named by Prometheus conventions.
func TestOperatorMetrics(t *testing.T) {
	srv := dnstest.Start(t, dnstest.Zone{"good.com": {MX: []dnstest.MX{{Pref: 10, Host: "mx.good.com"}}}}, nil)
	reg := prometheus.NewRegistry()
	b := memstore.NewBackend()
	svc, err := service.New(b, &service.Config{
		Checks:     &emailcheck.Config{Nameservers: []string{srv.Addr()}, AllowPrivateMX: true},
		Registerer: reg,
		Gatherer:   reg,
		Workers:    2,
	})
	if err != nil {
		t.Fatal(err)
	}
	_, key, err := service.Bootstrap(context.Background(), b.Accounts, service.BootstrapParams{Email: "ops@example.org"})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []string{"a@good.com", "b@good.com", "c@missing.com"} {
		req := httptest.NewRequest("GET", "/validate?email="+e, nil)
		req.Header.Set("x-api-key", key)
		apiMux(t, svc).ServeHTTP(httptest.NewRecorder(), req)
	}
	rec := httptest.NewRecorder()
	svc.Mux().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body := rec.Body.String()
	for _, want := range []string{
		"validmail_dns_cache_hits_total 1", "validmail_dns_cache_misses_total 2", "validmail_dns_cache_entries 2",
		`validmail_dns_queries_total{outcome="nxdomain"}`, "validmail_dns_query_duration_seconds_count",
		`validmail_queue_jobs{state="available"} 0`, "validmail_queue_oldest_active_job_age_seconds 0", "validmail_queue_stats_up 1",
		"validmail_workers 2", "validmail_workers_busy 0", "validmail_job_credits_refunded_total 0",
		"validmail_credits_charged_total 3",
		`validmail_dns_window{nameserver="` + srv.Addr() + `"}`, `validmail_dns_queries_in_flight{nameserver="` + srv.Addr() + `"} 0`,
		`validmail_dns_queries_waiting{nameserver="` + srv.Addr() + `"} 0`, `validmail_dns_srtt_seconds{nameserver="` + srv.Addr() + `"}`,
		`validmail_dns_rto_seconds{nameserver="` + srv.Addr() + `"}`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		// Collectors the host registers are its own business; ours must lint clean.
		if strings.HasPrefix(p.Metric, "validmail_") {
			t.Errorf("lint: %s: %s", p.Metric, p.Text)
		}
	}
	svc.Close()
}
