package dashboard_test

import (
	"context"
	"strings"
	"testing"

	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/store/memstore"
)

// noFullHistory is the memory store with its whole-history read refused:
// the overview must read the ledger's totals.
type noFullHistory struct {
	*memstore.Store
	t testing.TB
}

func (s noFullHistory) History(context.Context, credits.HistoryParams) ([]credits.Entry, error) {
	s.t.Error("the whole history was read")
	return nil, nil
}

// The overview's month and chart come from the ledger's per-day totals.
func TestOverviewFromTotals(t *testing.T) {
	b := memstore.NewBackend()
	mem := b.Credits.(*memstore.Store)
	b.Credits = noFullHistory{mem, t}
	s := startSite(t, b)
	u := newUser(t, s.base)
	u.signup("totals@example.com")
	a, err := b.Accounts.GetAccountByEmail(context.Background(), "totals@example.com")
	if err != nil {
		t.Fatal(err)
	}
	l := credits.New(b.Credits, nil)
	ctx := context.Background()
	for _, key := range []string{"c1", "c2", "c3"} {
		if _, err := l.Charge(ctx, a.ID, 4, key); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.Refund(ctx, a.ID, 4, "r1"); err != nil {
		t.Fatal(err)
	}
	page := u.do("GET", "/dashboard/", nil)
	if page.code != 200 {
		t.Fatalf("overview: %d", page.code)
	}
	for _, want := range []string{`<p class="big">12</p>`, "credits charged, 4 refunded", "8 credits used in the last 30 days"} {
		if !strings.Contains(page.body, want) {
			t.Errorf("overview lacks %q", want)
		}
	}
}
