package httpapi_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/validmail/validmail/store"
	"github.com/validmail/validmail/store/ratelimit"
)

// documentedOperations returns every operation of the served document but
// the operator's, the document's own and the billing routes (served only
// when a deployment sells credits, and checked by the billing tests), as
// method and a target with its path parameters filled in.
func documentedOperations(t *testing.T, f *fixture) [][2]string {
	t.Helper()
	d := readDoc(t, f.h.OpenAPI())
	fill := strings.NewReplacer("{job_id}", "1", "{batch_id}", "1", "{id}", "6f1c2a9e-3b7d-4c2e-9a51-0d2f8e4b7c13")
	var ops [][2]string
	for path, item := range d.Paths {
		if strings.HasPrefix(path, "/api/v1/admin/") || path == "/openapi.json" ||
			strings.HasPrefix(path, "/api/v1/billing/") || strings.HasPrefix(path, "/billing/") {
			continue
		}
		for method := range item {
			if method == "parameters" {
				continue
			}
			target := fill.Replace(path)
			if path == "/validate" {
				target += "?email=a@good.com"
			}
			ops = append(ops, [2]string{strings.ToUpper(method), target})
		}
	}
	slices.SortFunc(ops, func(a, b [2]string) int { return strings.Compare(a[0]+a[1], b[0]+b[1]) })
	if len(ops) < 15 {
		t.Fatalf("%d operations in the document", len(ops))
	}
	return ops
}

// Every operation's refusals by the layers in front of it, 503 when the
// store is down and 429 when the key's bucket is empty, are responses the
// document describes (status, Problem body, Retry-After and X-Request-Id
// headers): the checker in front of the handler fails the test on any
// other.
func TestEveryOperationDocumentsItsRefusals(t *testing.T) {
	t.Parallel()
	t.Run("503", func(t *testing.T) {
		t.Parallel()
		down := fmt.Errorf("%w: connection refused", store.ErrUnavailable)
		f := setup(t, &options{webhooks: true, accounts: func(a store.Accounts) store.Accounts { return failingAccounts{a, down} }})
		for _, op := range documentedOperations(t, f) {
			r := f.do(t, req{method: op[0], target: op[1], key: f.key, body: "{}"})
			if r.Code != 503 || r.Header.Get("Retry-After") == "" {
				t.Errorf("%s %s with the store down: %d %v %s", op[0], op[1], r.Code, r.Header, r.Body)
			}
		}
	})
	t.Run("429", func(t *testing.T) {
		t.Parallel()
		f := setup(t, &options{webhooks: true, limit: ratelimit.Limit{PerSecond: 0.001, Burst: 1}})
		for _, op := range documentedOperations(t, f) {
			key := f.newKey(t, f.acct.ID, store.AllPermissions())
			code := 0
			for range 30 {
				r := f.do(t, req{method: op[0], target: op[1], key: key, body: "{}"})
				if code = r.Code; code == 429 {
					if r.Header.Get("Retry-After") == "" {
						t.Errorf("%s %s: 429 without Retry-After", op[0], op[1])
					}
					break
				}
			}
			if code != 429 {
				t.Errorf("%s %s: no 429 in 30 requests on a bucket of 1 (last %d)", op[0], op[1], code)
			}
		}
	})
}
