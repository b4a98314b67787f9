package httpapi_test

import (
	"strings"
	"testing"
)

// A repeated key in a body where money moves is refused, never read as
// its last value: {"credits":1,"credits":1000000000} grants nothing.
func TestRepeatedKeysRefused(t *testing.T) {
	t.Parallel()
	f := setup(t, &options{adminToken: adminToken})
	grants := "/api/v1/admin/accounts/owner@good.com/grants"
	before := f.balance(t, f.acct.ID)
	for _, body := range []string{
		`{"credits":1,"credits":1000000000,"reason":"x"}`,
		`{"credits":1,"reason":"x","reason":"y"}`,
	} {
		wantProblem(t, f.do(t, adminReq("POST", grants, adminToken, body)), 400, "invalid_body")
	}
	wantProblem(t, f.do(t, req{method: "POST", target: "/validate/async", key: f.key, body: `{"emails":["a@good.com"],"emails":["b@good.com","c@good.com"]}`}), 400, "invalid_body")
	// Unknown fields are refused where credits are charged, as where
	// they are granted: a misspelt option is never silently ignored.
	wantProblem(t, f.do(t, req{method: "POST", target: "/validate/async", key: f.key, body: `{"emails":["a@good.com"],"webhook_url":"https://x.example"}`}), 400, "invalid_body")
	wantProblem(t, f.do(t, req{method: "POST", target: "/validate/async", key: f.key, body: `{"emails":["a@good.com"]} {"emails":["b@good.com"]}`}), 400, "invalid_json")
	if after := f.balance(t, f.acct.ID); after != before {
		t.Errorf("balance %d after refused bodies, want %d", after, before)
	}
	// The same keys in different objects are not repeats.
	if r := f.do(t, adminReq("POST", grants, adminToken, `{"credits":2,"reason":"x"}`)); r.Code != 201 && r.Code != 200 {
		t.Fatalf("a valid grant: %d %s", r.Code, r.Body)
	}
}

// A caller's X-Request-Id that is a UUID names the request in the answer
// (and the logs); anything else is replaced, never echoed.
func TestCallersRequestID(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	const id = "6f1c2a9e-3b7d-4c2e-9a51-0d2f8e4b7c13"
	for _, tt := range []struct {
		sent string
		keep bool
	}{
		{id, true},
		{"6F1C2A9E-3B7D-4C2E-9A51-0D2F8E4B7C13", true},
		{"not-a-uuid", false},
		{id + "x", false},
		{"<script>", false},
	} {
		r := f.do(t, req{method: "GET", target: "/api/v1/account", key: f.key, header: map[string]string{"X-Request-Id": tt.sent}})
		got := r.Header.Get("X-Request-Id")
		body := r.JSON(t)["requestId"]
		switch {
		case tt.keep && (got != id || body != id):
			t.Errorf("sent %q: answered %q (body %v), want %q", tt.sent, got, body, id)
		case !tt.keep && (got == tt.sent || body == tt.sent || len(got) != 36):
			t.Errorf("sent %q: answered %q (body %v), want a new UUID", tt.sent, got, body)
		}
		// The request's log record carries the id answered.
		if !strings.Contains(f.logs.String(), `"request_id":"`+got+`"`) {
			t.Errorf("sent %q: no log record with request_id %q in\n%s", tt.sent, got, f.logs.String())
		}
	}
	if strings.Contains(f.logs.String(), "<script>") || strings.Contains(f.logs.String(), "not-a-uuid") {
		t.Errorf("a refused X-Request-Id reached the log:\n%s", f.logs.String())
	}
}
