package httpapi_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/validmail/validmail/store"
)

// Surrounding white space is trimmed before validating, and an address
// over 1 KB is refused before anything is charged.
func TestAddressTrimmedAndBounded(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	resp := f.do(t, req{method: "GET", target: "/validate?email=" + url.QueryEscape(" jane@good.com\t"), key: f.key})
	m := resp.JSON(t)
	if resp.Code != 200 || m["email"] != "jane@good.com" || m["confidence"].(map[string]any)["status"] != "LIKELY" {
		t.Fatalf("trimmed address: %d %s", resp.Code, resp.Body)
	}
	before := f.balance(t, f.acct.ID)
	long := strings.Repeat("a", 1100) + "@good.com"
	resp = f.do(t, req{method: "GET", target: "/validate?email=" + long, key: f.key})
	wantProblem(t, resp, http.StatusBadRequest, "address_too_long")
	if strings.Contains(string(resp.Body), long) {
		t.Error("the long address was echoed back")
	}
	resp = f.do(t, req{method: "POST", target: "/validate/async", key: f.key, body: `{"emails":["a@good.com","` + long + `"]}`})
	wantProblem(t, resp, http.StatusBadRequest, "address_too_long")
	if after := f.balance(t, f.acct.ID); after != before {
		t.Errorf("balance %d after refused requests, want %d", after, before)
	}
}

// A NUL byte or invalid UTF-8 in a batch address is a result
// (INVALID_FORMAT), on every backend, not a 500; in a key name or an
// Idempotency-Key it is a 400.
func TestNULAndInvalidUTF8(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	f.runPool(t)
	resp := f.do(t, req{method: "POST", target: "/validate/async", key: f.key, body: `{"emails":["a\u0000b@good.com","ok@good.com"]}`})
	if resp.Code != http.StatusAccepted {
		t.Fatalf("batch with a NUL: %d %s", resp.Code, resp.Body)
	}
	resp = f.do(t, req{method: "POST", target: "/api/v1/keys", key: f.key, body: `{"name":"a\u0000b"}`})
	wantProblem(t, resp, http.StatusBadRequest, "invalid_body")
	resp = f.do(t, req{method: "POST", target: "/validate/async", key: f.key, body: `{"emails":["a@good.com"]}`,
		header: map[string]string{"Idempotency-Key": "k\x01"}})
	wantProblem(t, resp, http.StatusBadRequest, "invalid_body")
	resp = f.do(t, req{method: "GET", target: "/validate?email=a%00b@good.com", key: f.key})
	if m := resp.JSON(t); resp.Code != 200 || m["confidence"].(map[string]any)["status"] != "INVALID_FORMAT" {
		t.Fatalf("GET with a NUL: %d %s", resp.Code, resp.Body)
	}
}

func TestCreateKeyStrict(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	for _, body := range []string{
		`{"permissions":["validate","validate"]}`,
		`{"permissions":[]}`,
		`{"name":"x","admin":true}`,
		`{"name":"x"} {"name":"y"}`,
	} {
		resp := f.do(t, req{method: "POST", target: "/api/v1/keys", key: f.key, body: body})
		if resp.Code != http.StatusBadRequest {
			t.Errorf("%s: %d %s, want 400", body, resp.Code, resp.Body)
		}
	}
}

// An account holds at most 100 active keys: more keys are no way around
// the rate limits.
func TestKeyCap(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	for i := 1; i < 100; i++ { // the fixture's own key is the first
		f.newKey(t, f.acct.ID, store.SignupPermissions())
	}
	resp := f.do(t, req{method: "POST", target: "/api/v1/keys", key: f.key, body: `{"name":"one too many"}`})
	wantProblem(t, resp, http.StatusConflict, "key_limit_reached")
}

// A key may revoke only keys whose permissions it holds, and itself only
// when it says so.
func TestRevokeRules(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	keysOnly := f.newKey(t, f.acct.ID, []store.Permission{store.PermKeys})
	ks, err := f.st.ListKeys(t.Context(), f.acct.ID)
	if err != nil {
		t.Fatal(err)
	}
	ownerID, keysOnlyID := ks[0].ID, ks[len(ks)-1].ID
	resp := f.do(t, req{method: "DELETE", target: "/api/v1/keys/" + ownerID, key: keysOnly})
	wantProblem(t, resp, http.StatusForbidden, "permission_denied")
	resp = f.do(t, req{method: "DELETE", target: "/api/v1/keys/" + keysOnlyID, key: keysOnly})
	wantProblem(t, resp, http.StatusConflict, "confirmation_required")
	resp = f.do(t, req{method: "DELETE", target: "/api/v1/keys/" + keysOnlyID + "?confirm=true", key: keysOnly})
	if resp.Code != http.StatusOK {
		t.Fatalf("confirmed self-revocation: %d %s", resp.Code, resp.Body)
	}
	resp = f.do(t, req{method: "GET", target: "/api/v1/account", key: f.key})
	if resp.Code != http.StatusOK {
		t.Fatalf("the owner's key was locked out: %d", resp.Code)
	}
}
