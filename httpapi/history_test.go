package httpapi_test

import (
	"context"
	"encoding/base64"
	"testing"

	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/store/memstore"
)

// noFullHistory is the memory store with its whole-history read refused:
// the API's reads must come from pages and totals.
type noFullHistory struct {
	*memstore.Store
	t testing.TB
}

func (s noFullHistory) History(context.Context, credits.HistoryParams) ([]credits.Entry, error) {
	s.t.Error("the whole history was read")
	return nil, nil
}

// The history and the account's month read a page and the totals, never
// the whole ledger; a cursor that names no entry is 400, never 5xx.
func TestCreditReadsBounded(t *testing.T) {
	t.Parallel()
	f := setup(t, &options{ledger: func(cs credits.Store) credits.Store {
		return noFullHistory{cs.(*memstore.Store), t}
	}})
	for _, e := range []string{"a@good.com", "b@good.com", "c@nowhere.invalid"} {
		f.do(t, req{method: "GET", target: "/validate?email=" + e, key: f.key})
	}
	m := f.do(t, req{method: "GET", target: "/api/v1/credits/history?limit=3", key: f.key}).JSON(t)
	if n := len(m["entries"].([]any)); n != 3 || m["next_cursor"] == nil {
		t.Fatalf("history: %v", m)
	}
	m = f.do(t, req{method: "GET", target: "/api/v1/account", key: f.key}).JSON(t)
	usage := m["usage"].(map[string]any)
	if usage["credits_charged"] != float64(3) || usage["credits_refunded"] != float64(0) {
		t.Fatalf("usage %v", usage)
	}
	cursor := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	for _, c := range []string{
		cursor("0:abc"), cursor("0:\xff\xfe"), cursor("0:0"), cursor("0:-5"), cursor("0:007"),
		cursor("0:99999999999999999999"), cursor("0:1\x00"), cursor("0: 1"), "%ff", "%00",
	} {
		wantProblem(t, f.do(t, req{method: "GET", target: "/api/v1/credits/history?cursor=" + c, key: f.key}), 400, "invalid_body")
	}
	// A cursor past every entry is the first page.
	m = f.do(t, req{method: "GET", target: "/api/v1/credits/history?cursor=" + cursor("0:9223372036854775807"), key: f.key}).JSON(t)
	if n := len(m["entries"].([]any)); n != 4 || m["next_cursor"] != nil {
		t.Fatalf("history from the top: %v", m)
	}
}
