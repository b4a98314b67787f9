package httpapi_test

import (
	"testing"
)

// encoding/json matches a key to a field regardless of case (and of
// Unicode's simple folding: "ſ" is an "s", the Kelvin sign a "k"), so a
// body naming one field twice in two spellings is read as its last
// spelling's value. Where credits move, that is a repeated key like any
// other: a reader who takes the first spelling (a gateway, an audit log,
// a case-sensitive parser) must never see another amount than the one
// applied.
func TestRepeatedKeysInOtherCaseRefused(t *testing.T) {
	t.Parallel()
	f := setup(t, &options{adminToken: adminToken})
	grants := "/api/v1/admin/accounts/owner@good.com/grants"
	before := f.balance(t, f.acct.ID)
	for _, body := range []string{
		`{"credits":1,"Credits":1000000000,"reason":"x"}`,
		`{"credits":1,"CREDITS":1000000000,"reason":"x"}`,
		`{"credits":1,"credit\u017f":1000000000,"reason":"x"}`, // ſ folds to s
		`{"credits":1,"reason":"x","Reason":"y"}`,
	} {
		r := f.do(t, adminReq("POST", grants, adminToken, body))
		if r.Code != 400 {
			t.Errorf("grant %s: %d %s, want 400 invalid_body", body, r.Code, r.Body)
		}
	}
	for _, body := range []string{
		`{"emails":["a@good.com"],"Emails":["b@good.com","c@good.com"]}`,
		`{"emails":["a@good.com"],"EMAILS":["b@good.com","c@good.com"]}`,
	} {
		r := f.do(t, req{method: "POST", target: "/validate/async", key: f.key, body: body})
		if r.Code != 400 {
			t.Errorf("batch %s: %d %s, want 400 invalid_body", body, r.Code, r.Body)
		}
	}
	if r := f.do(t, req{method: "POST", target: "/api/v1/keys", key: f.key,
		body: `{"name":"a","permissions":["validate"],"Permissions":["validate","keys","webhooks"]}`}); r.Code != 400 {
		t.Errorf("key with permissions in two spellings: %d %s, want 400 invalid_body", r.Code, r.Body)
	}
	if after := f.balance(t, f.acct.ID); after != before {
		t.Errorf("balance %d after bodies repeating a key in another case, want %d", after, before)
	}
}

// PUT /api/v1/webhook refuses a repeated key (in any case) and a value
// after the body, as every JSON body does; refused, it creates nothing.
func TestWebhookBodyStrict(t *testing.T) {
	t.Parallel()
	f := setup(t, &options{webhooks: true})
	const url = "https://hooks.good.com/validmail"
	for _, tc := range []struct{ name, body, code string }{
		{"repeated key", `{"url":"` + url + `","url":"https://other.good.com/"}`, "invalid_body"},
		{"trailing value", `{"url":"` + url + `"} {}`, "invalid_json"},
		{"repeated key in another case", `{"url":"` + url + `","URL":"https://other.good.com/"}`, "invalid_body"},
	} {
		r := f.do(t, req{method: "PUT", target: "/api/v1/webhook", key: f.key, body: tc.body})
		if r.Code != 400 || r.JSON(t)["code"] != tc.code {
			t.Errorf("%s: %d %s, want 400 %s", tc.name, r.Code, r.Body, tc.code)
		}
	}
	// Nothing was created by a refused body.
	if r := f.do(t, req{method: "GET", target: "/api/v1/webhook", key: f.key}); r.Code != 404 {
		t.Errorf("after refused bodies the endpoint is %d %s", r.Code, r.Body)
	}
}
