package httpapi_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/httpapi"
	"github.com/validmail/validmail/jobs"
	"github.com/validmail/validmail/store"
	"github.com/validmail/validmail/store/memstore"
	"github.com/validmail/validmail/store/ratelimit"
)

func TestAccessLog(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	resp := f.do(t, req{method: "GET", target: "/validate?email=a@good.com", key: f.key})
	f.do(t, req{method: "GET", target: "/nowhere"})
	var recs []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(f.logs.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		recs = append(recs, m)
	}
	if len(recs) != 2 {
		t.Fatalf("%d log records, want 2:\n%s", len(recs), f.logs.String())
	}
	r := recs[0]
	if r["request_id"] != resp.Header.Get("X-Request-Id") || r["account_id"] != f.acct.ID || r["route"] != "GET /validate" ||
		r["status"] != 200.0 || r["duration"] == nil {
		t.Fatalf("access record %v", r)
	}
	if recs[1]["route"] != "unmatched" || recs[1]["status"] != 404.0 || recs[1]["account_id"] != "" {
		t.Fatalf("unmatched record %v", recs[1])
	}
	if strings.Contains(f.logs.String(), f.key) {
		t.Fatal("the log holds the API key")
	}
}

func TestMetrics(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	f.do(t, req{method: "GET", target: "/validate?email=a@good.com", key: f.key})
	f.do(t, req{method: "GET", target: "/validate?email=a@servfail.com", key: f.key})
	f.do(t, req{method: "GET", target: "/validate"})
	f.do(t, req{method: "POST", target: "/validate/async", key: f.key, body: `{"emails":["a@good.com","b@good.com"]}`})
	want := `
# HELP validmail_http_requests_total HTTP requests by route pattern and status code.
# TYPE validmail_http_requests_total counter
validmail_http_requests_total{code="200",route="GET /validate"} 2
validmail_http_requests_total{code="202",route="POST /api/v1/lists"} 0
validmail_http_requests_total{code="202",route="POST /validate/async"} 1
validmail_http_requests_total{code="401",route="GET /validate"} 1
# HELP validmail_validations_total Single validations answered by GET /validate, by confidence status.
# TYPE validmail_validations_total counter
validmail_validations_total{status="CATCH_ALL"} 0
validmail_validations_total{status="DELIVERABLE"} 0
validmail_validations_total{status="DISPOSABLE"} 0
validmail_validations_total{status="INVALID"} 0
validmail_validations_total{status="INVALID_DOMAIN"} 0
validmail_validations_total{status="INVALID_FORMAT"} 0
validmail_validations_total{status="LIKELY"} 1
validmail_validations_total{status="NO_MX_RECORDS"} 0
validmail_validations_total{status="UNDELIVERABLE"} 0
validmail_validations_total{status="UNKNOWN"} 1
# HELP validmail_credits_charged_total Credits charged by accepted requests: single validations and batches.
# TYPE validmail_credits_charged_total counter
validmail_credits_charged_total 4
# HELP validmail_credits_refunded_total Credits refunded for single validations that ended UNKNOWN (batch jobs: validmail_job_credits_refunded_total).
# TYPE validmail_credits_refunded_total counter
validmail_credits_refunded_total 1
`
	if err := testutil.GatherAndCompare(f.reg, strings.NewReader(want),
		"validmail_http_requests_total", "validmail_validations_total", "validmail_credits_charged_total", "validmail_credits_refunded_total"); err != nil {
		t.Fatal(err)
	}
	problems, err := testutil.GatherAndLint(f.reg)
	if err != nil || len(problems) > 0 {
		t.Fatalf("metric lint: %v %v", problems, err)
	}
	// GET /validate and POST /validate/async observed, POST
	// /api/v1/lists exported from the start.
	if n := testutil.CollectAndCount(f.reg, "validmail_http_request_duration_seconds"); n != 3 {
		t.Fatalf("%d latency series, want 3", n)
	}
}

func TestNewHandlerConfig(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	s := memstore.New()
	ledger := credits.New(s, nil)
	q, _ := jobs.NewQueue(s.Backend().Jobs, ledger, nil)
	// args are NewHandler's required arguments.
	type args struct {
		v        jobs.Validator
		ledger   *credits.Ledger
		queue    *jobs.Queue
		accounts store.Accounts
		cfg      httpapi.Config
	}
	full := args{v: f.v, ledger: ledger, queue: q, accounts: s}
	for name, mod := range map[string]func(*args){
		"no validator": func(a *args) { a.v = nil },
		"no ledger":    func(a *args) { a.ledger = nil },
		"no queue":     func(a *args) { a.queue = nil },
		"no accounts":  func(a *args) { a.accounts = nil },
		"negative max": func(a *args) { a.cfg.MaxBodyBytes = -1 },
		"bad burst":    func(a *args) { a.cfg.RateLimit = ratelimit.Limit{PerSecond: 1, Burst: -1} },
	} {
		a := full
		mod(&a)
		if _, err := httpapi.NewHandler(a.v, a.ledger, a.queue, a.accounts, &a.cfg); !errors.Is(err, httpapi.ErrConfig) {
			t.Errorf("%s: %v, want ErrConfig", name, err)
		}
	}
	reg := prometheus.NewRegistry()
	c := httpapi.Config{Registerer: reg}
	if _, err := httpapi.NewHandler(f.v, ledger, q, s, &c); err != nil {
		t.Fatal(err)
	}
	if _, err := httpapi.NewHandler(f.v, ledger, q, s, &c); err == nil {
		t.Error("two handlers registered the same metrics")
	}
}

func TestMemoryRateLimiter(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	l := ratelimit.NewMemory(func() time.Time { return now })
	limit := ratelimit.Limit{PerSecond: 2, Burst: 3}
	for i := range 3 {
		d, err := l.Allow(t.Context(), "k", limit)
		if err != nil || !d.Allowed || d.Remaining != 2-i || d.Limit != 3 {
			t.Fatalf("request %d: %+v %v", i, d, err)
		}
	}
	d, _ := l.Allow(t.Context(), "k", limit)
	if d.Allowed || d.RetryAfter != 500*time.Millisecond || d.Reset != 1500*time.Millisecond {
		t.Fatalf("4th request: %+v", d)
	}
	if d, _ := l.Allow(t.Context(), "other", limit); !d.Allowed {
		t.Fatal("keys share a bucket")
	}
	now = now.Add(500 * time.Millisecond)
	if d, _ := l.Allow(t.Context(), "k", limit); !d.Allowed || d.Remaining != 0 {
		t.Fatalf("after refill: %+v", d)
	}
}
