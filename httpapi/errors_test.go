package httpapi_test

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/store"
	"github.com/validmail/validmail/store/ratelimit"
)

// failingAccounts fails every authentication with err.
type failingAccounts struct {
	store.Accounts
	err error
}

func (a failingAccounts) Authenticate(context.Context, string) (store.Key, error) {
	return store.Key{}, a.err
}

// failingCredits fails every charge with err.
type failingCredits struct {
	credits.Store
	err error
}

func (c failingCredits) Apply(context.Context, credits.Change) (credits.Entry, error) {
	return credits.Entry{}, c.err
}

type panicValidator struct{}

func (panicValidator) Validate(context.Context, string, ...emailcheck.CallOption) (emailcheck.Result, error) {
	panic("validator exploded at 0xdeadbeef")
}

// errLeaky looks like what a database driver might return.
var errLeaky = errors.New(`ERROR: relation "api_keys" does not exist (SQLSTATE 42P01): SELECT account_id FROM api_keys WHERE hash = $1`)

// Every error code, with its status and headers.
func TestErrors(t *testing.T) {
	t.Parallel()
	batch := func(n int) string {
		return `{"emails":[` + strings.TrimSuffix(strings.Repeat(`"a@good.com",`, n), ",") + `]}`
	}
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	cases := []struct {
		name   string
		opts   *options
		req    func(f *fixture) req
		status int
		code   string
		check  func(t *testing.T, resp *response)
	}{
		{"missing email", nil, func(f *fixture) req { return req{method: "GET", target: "/validate", key: f.key} }, 400, "missing_email", nil},
		{"empty email", nil, func(f *fixture) req { return req{method: "GET", target: "/validate?email=", key: f.key} }, 400, "missing_email", nil},
		{"invalid json", nil, func(f *fixture) req {
			return req{method: "POST", target: "/validate/async", key: f.key, body: `{"emails":["a@good.com"`}
		}, 400, "invalid_json", nil},
		{"trailing data", nil, func(f *fixture) req {
			return req{method: "POST", target: "/validate/async", key: f.key, body: `{"emails":["a@good.com"]} {}`}
		}, 400, "invalid_json", nil},
		{"no body", nil, func(f *fixture) req { return req{method: "POST", target: "/validate/async", key: f.key} }, 400, "invalid_json", nil},
		{"emails not an array", nil, func(f *fixture) req {
			return req{method: "POST", target: "/validate/async", key: f.key, body: `{"emails":"a@good.com"}`}
		}, 400, "invalid_body", nil},
		{"emails of numbers", nil, func(f *fixture) req {
			return req{method: "POST", target: "/validate/async", key: f.key, body: `{"emails":[1,2]}`}
		}, 400, "invalid_body", nil},
		{"emails with null", nil, func(f *fixture) req {
			return req{method: "POST", target: "/validate/async", key: f.key, body: `{"emails":["a@good.com",null]}`}
		}, 400, "invalid_body", nil},
		{"emails missing", nil, func(f *fixture) req {
			return req{method: "POST", target: "/validate/async", key: f.key, body: `{"addresses":["a@good.com"]}`}
		}, 400, "invalid_body", nil},
		{"body an array", nil, func(f *fixture) req {
			return req{method: "POST", target: "/validate/async", key: f.key, body: `["a@good.com"]`}
		}, 400, "invalid_body", nil},
		{"empty batch", nil, func(f *fixture) req {
			return req{method: "POST", target: "/validate/async", key: f.key, body: `{"emails":[]}`}
		}, 400, "empty_batch", nil},
		{"batch too large", nil, func(f *fixture) req {
			return req{method: "POST", target: "/validate/async", key: f.key, body: batch(1001)}
		}, 400, "batch_too_large", nil},
		{"missing key", nil, func(f *fixture) req { return req{method: "GET", target: "/validate?email=a@good.com"} }, 401, "missing_api_key", nil},
		{"malformed key", nil, func(f *fixture) req {
			return req{method: "GET", target: "/validate?email=a@good.com", key: "hunter2"}
		}, 401, "invalid_api_key", nil},
		{"unknown key", nil, func(f *fixture) req {
			return req{method: "GET", target: "/api/v1/account", key: store.NewSecret()}
		}, 401, "invalid_api_key", nil},
		{"insufficient credits", &options{credits: 2}, func(f *fixture) req {
			return req{method: "POST", target: "/validate/async", key: f.key, body: batch(3)}
		}, 402, "insufficient_credits", nil},
		{"permission denied", nil, func(f *fixture) req {
			return req{method: "GET", target: "/api/v1/account", key: f.newKey(t, f.acct.ID, []store.Permission{store.PermValidate})}
		}, 403, "permission_denied", nil},
		{"job not found", nil, func(f *fixture) req { return req{method: "GET", target: "/validate/status/42", key: f.key} }, 404, "job_not_found", nil},
		{"no such path", nil, func(f *fixture) req { return req{method: "GET", target: "/v2/validate", key: f.key} }, 404, "not_found", nil},
		{"key not found", nil, func(f *fixture) req { return req{method: "DELETE", target: "/api/v1/keys/42", key: f.key} }, 404, "not_found", nil},
		{"wrong method", nil, func(f *fixture) req { return req{method: "POST", target: "/validate", key: f.key} }, 405, "method_not_allowed",
			func(t *testing.T, resp *response) {
				if resp.Header.Get("Allow") != "GET" {
					t.Errorf("Allow %q", resp.Header.Get("Allow"))
				}
			}},
		{"wrong method on a job", nil, func(f *fixture) req { return req{method: "PUT", target: "/validate/status/1", key: f.key} }, 405, "method_not_allowed",
			func(t *testing.T, resp *response) {
				if resp.Header.Get("Allow") != "GET, HEAD" {
					t.Errorf("Allow %q", resp.Header.Get("Allow"))
				}
			}},
		{"body too large", &options{maxBody: 64}, func(f *fixture) req {
			return req{method: "POST", target: "/validate/async", key: f.key, body: batch(10)}
		}, 413, "body_too_large", nil},
		{"unsupported media type", nil, func(f *fixture) req {
			return req{method: "POST", target: "/validate/async", key: f.key, body: "emails=a@good.com",
				header: map[string]string{"Content-Type": "application/x-www-form-urlencoded"}}
		}, 415, "unsupported_media_type", nil},
		{"rate limited", &options{limit: ratelimit.Limit{PerSecond: 0.01, Burst: 1}}, func(f *fixture) req {
			f.do(t, req{method: "GET", target: "/validate?email=a@good.com", key: f.key})
			return req{method: "GET", target: "/validate?email=a@good.com", key: f.key}
		}, 429, "rate_limited", func(t *testing.T, resp *response) {
			ra, err := strconv.Atoi(resp.Header.Get("Retry-After"))
			if err != nil || ra < 90 || ra > 100 {
				t.Errorf("Retry-After %q, want about 100", resp.Header.Get("Retry-After"))
			}
			if resp.Header.Get("RateLimit-Limit") != "1" || resp.Header.Get("RateLimit-Remaining") != "0" {
				t.Errorf("headers %v", resp.Header)
			}
		}},
		{"internal", &options{accounts: func(a store.Accounts) store.Accounts { return failingAccounts{a, errLeaky} }}, func(f *fixture) req {
			return req{method: "GET", target: "/validate?email=a@good.com", key: f.key}
		}, 500, "internal", nil},
		{"panic", &options{validator: panicValidator{}}, func(f *fixture) req {
			return req{method: "GET", target: "/validate?email=a@good.com", key: f.key}
		}, 500, "internal", nil},
		{"store unreachable", &options{accounts: func(a store.Accounts) store.Accounts { return failingAccounts{a, refused} }}, func(f *fixture) req {
			return req{method: "GET", target: "/api/v1/account", key: f.key}
		}, 503, "unavailable", func(t *testing.T, resp *response) {
			if resp.Header.Get("Retry-After") == "" {
				t.Error("no Retry-After")
			}
		}},
		{"ledger timeout", &options{ledger: func(s credits.Store) credits.Store {
			return failingCredits{s, context.DeadlineExceeded}
		}}, func(f *fixture) req {
			return req{method: "GET", target: "/validate?email=a@good.com", key: f.key}
		}, 503, "unavailable", nil},
	}
	seen := map[string]bool{}
	for _, c := range cases {
		seen[c.code] = true
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t, c.opts)
			rq := c.req(f)
			resp := f.do(t, rq)
			m := wantProblem(t, resp, c.status, c.code)
			for _, k := range []string{"type", "title", "status", "detail", "code", "requestId"} {
				if _, ok := m[k]; !ok {
					t.Errorf("problem without %s: %s", k, resp.Body)
				}
			}
			body := string(resp.Body)
			for _, leak := range []string{"SELECT", "SQLSTATE", "goroutine", "0xdeadbeef", "exploded", "connection refused", "deadline"} {
				if strings.Contains(body, leak) {
					t.Errorf("response leaks %q: %s", leak, body)
				}
			}
			if rq.key != "" && strings.Contains(body, rq.key) {
				t.Errorf("response echoes the key: %s", body)
			}
			if logs := f.logs.String(); rq.key != "" && strings.Contains(logs, rq.key) {
				t.Errorf("log holds the key: %s", logs)
			}
			if c.check != nil {
				c.check(t, resp)
			}
		})
	}
	for code := range map[string]int{"missing_email": 0, "invalid_json": 0, "invalid_body": 0, "empty_batch": 0, "batch_too_large": 0,
		"missing_api_key": 0, "invalid_api_key": 0, "insufficient_credits": 0, "permission_denied": 0, "job_not_found": 0, "not_found": 0,
		"method_not_allowed": 0, "body_too_large": 0, "unsupported_media_type": 0, "idempotency_key_reused": 0, "rate_limited": 0,
		"internal": 0, "unavailable": 0} {
		if !seen[code] && code != "idempotency_key_reused" { // TestBatchIdempotency
			t.Errorf("code %s not tested", code)
		}
	}
}

// TestPanicRefunds checks that a validator panic answers 500 and gives the
// credit back.
func TestPanicRefunds(t *testing.T) {
	t.Parallel()
	f := setup(t, &options{validator: panicValidator{}})
	resp := f.do(t, req{method: "GET", target: "/validate?email=a@good.com", key: f.key})
	if resp.Code != 500 {
		t.Fatalf("status %d; want 500", resp.Code)
	}
	bal, err := f.ledger.Balance(context.Background(), f.acct.ID)
	if err != nil || bal != 300 {
		t.Fatalf("balance %d, %v; want 300 (refunded)", bal, err)
	}
}

// TestHeadValidateChargesNothing checks that HEAD, which a GET pattern would
// also match, is refused before any credit is charged.
func TestHeadValidateChargesNothing(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	resp := f.do(t, req{method: "HEAD", target: "/validate?email=jane@good.com", key: f.key})
	if resp.Code != 405 || resp.Header.Get("Allow") != "GET" {
		t.Fatalf("HEAD /validate: %d, Allow %q; want 405, GET", resp.Code, resp.Header.Get("Allow"))
	}
	bal, err := f.ledger.Balance(context.Background(), f.acct.ID)
	if err != nil || bal != 300 {
		t.Fatalf("balance %d, %v; want 300 (nothing charged)", bal, err)
	}
}
