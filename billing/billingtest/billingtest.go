// Package billingtest is the conformance suite for [billing.Store]
// backends. A deployment's backend runs it, with every other suite,
// through storetest.RunBackend; [Run] is the billing part alone.
package billingtest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/validmail/validmail/billing"
	"github.com/validmail/validmail/credits"
)

// Instance is one process's view of a deployment's storage: what a
// checkout is recorded in and what its credits are granted to.
type Instance struct {
	// Billing records checkouts.
	Billing billing.Store
	// Credits is the ledger's store of the same deployment.
	Credits credits.Store
}

// Harness makes the stores the suite checks.
type Harness struct {
	// New returns two instances over one fresh, empty deployment: two
	// processes' connections for a shared backend, or one instance twice
	// for a backend living in one process. It is called once per
	// subtest, from parallel subtests.
	New func(t *testing.T) (Instance, Instance)
}

// Run checks that the stores made by h behave as [billing.Store] promises,
// and that a checkout's grant, keyed by [billing.GrantKey] on the account
// recorded with it, is applied once across two instances.
func Run(t *testing.T, h Harness) {
	tests := []struct {
		name string
		f    func(t *testing.T, a, b Instance)
	}{
		{"RecordAndRead", testRecordAndRead},
		{"RecordOnce", testRecordOnce},
		{"RecordOnceConcurrent", testRecordOnceConcurrent},
		{"Unknown", testUnknown},
		{"Invalid", testInvalid},
		{"GrantOnceAcrossInstances", testGrantOnce},
		{"ContextCanceled", testCanceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a, b := h.New(t)
			if a.Billing == nil || b.Billing == nil || a.Credits == nil || b.Credits == nil {
				t.Fatal("billingtest: an instance lacks Billing or Credits")
			}
			tt.f(t, a, b)
		})
	}
}

func checkout() billing.Checkout {
	return billing.Checkout{
		ID:        "cs_test_" + uuid.NewString(),
		AccountID: "acct-" + uuid.NewString(),
		Pack:      billing.Pack{Credits: 1000, Price: 900, Currency: "usd", Plan: "pro"},
	}
}

func testRecordAndRead(t *testing.T, a, b Instance) {
	ctx := t.Context()
	c := checkout()
	before := time.Now().Add(-time.Hour) // the store's clock may differ a little
	got, err := a.Billing.RecordCheckout(ctx, c)
	if err != nil {
		t.Fatalf("RecordCheckout: %v", err)
	}
	if got.ID != c.ID || got.AccountID != c.AccountID || got.Pack != c.Pack || got.CreatedAt.Before(before) {
		t.Fatalf("RecordCheckout returned %+v for %+v", got, c)
	}
	for name, s := range map[string]billing.Store{"same instance": a.Billing, "other instance": b.Billing} {
		read, err := s.Checkout(ctx, c.ID)
		if err != nil {
			t.Fatalf("%s: Checkout: %v", name, err)
		}
		if read.ID != c.ID || read.AccountID != c.AccountID || read.Pack != c.Pack || !read.CreatedAt.Equal(got.CreatedAt) {
			t.Fatalf("%s: Checkout = %+v, recorded %+v", name, read, got)
		}
	}
}

func testRecordOnce(t *testing.T, a, b Instance) {
	ctx := t.Context()
	c := checkout()
	if _, err := a.Billing.RecordCheckout(ctx, c); err != nil {
		t.Fatal(err)
	}
	other := c
	other.AccountID, other.Pack.Credits = "acct-"+uuid.NewString(), 5
	if _, err := b.Billing.RecordCheckout(ctx, other); !errors.Is(err, billing.ErrCheckoutExists) {
		t.Fatalf("recording the id again: %v, want ErrCheckoutExists", err)
	}
	read, err := b.Billing.Checkout(ctx, c.ID)
	if err != nil || read.AccountID != c.AccountID || read.Pack != c.Pack {
		t.Fatalf("after a second record: %+v, %v; want the first kept", read, err)
	}
}

func testRecordOnceConcurrent(t *testing.T, a, b Instance) {
	ctx := t.Context()
	c := checkout()
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	accounts := make([]string, n)
	for i := range n {
		s := a.Billing
		if i%2 == 1 {
			s = b.Billing
		}
		wg.Go(func() {
			mine := c
			mine.AccountID = "acct-" + uuid.NewString()
			accounts[i] = mine.AccountID
			_, errs[i] = s.RecordCheckout(ctx, mine)
		})
	}
	wg.Wait()
	winner := ""
	for i, err := range errs {
		switch {
		case err == nil && winner == "":
			winner = accounts[i]
		case err == nil:
			t.Fatalf("two records of one id succeeded")
		case !errors.Is(err, billing.ErrCheckoutExists):
			t.Fatalf("record %d: %v", i, err)
		}
	}
	read, err := a.Billing.Checkout(ctx, c.ID)
	if err != nil || winner == "" || read.AccountID != winner {
		t.Fatalf("read %+v, %v; the record that succeeded was for %q", read, err, winner)
	}
}

func testUnknown(t *testing.T, a, _ Instance) {
	for _, id := range []string{"cs_test_" + uuid.NewString(), "", "checkout:x"} {
		if _, err := a.Billing.Checkout(t.Context(), id); !errors.Is(err, billing.ErrNotFound) {
			t.Errorf("Checkout(%q): %v, want ErrNotFound", id, err)
		}
	}
}

func testInvalid(t *testing.T, a, _ Instance) {
	for name, mutate := range map[string]func(*billing.Checkout){
		"no id":         func(c *billing.Checkout) { c.ID = "" },
		"no account":    func(c *billing.Checkout) { c.AccountID = "" },
		"no credits":    func(c *billing.Checkout) { c.Pack.Credits = 0 },
		"free":          func(c *billing.Checkout) { c.Pack.Price = 0 },
		"long id":       func(c *billing.Checkout) { c.ID = string(make([]byte, billing.MaxCheckoutIDBytes+1)) },
		"bad currency":  func(c *billing.Checkout) { c.Pack.Currency = "US" },
		"bad plan":      func(c *billing.Checkout) { c.Pack.Plan = "a b" },
		"invalid UTF-8": func(c *billing.Checkout) { c.ID = "cs_\xff" },
	} {
		c := checkout()
		mutate(&c)
		if _, err := a.Billing.RecordCheckout(t.Context(), c); !errors.Is(err, billing.ErrInvalidCheckout) {
			t.Errorf("%s: %v, want ErrInvalidCheckout", name, err)
		}
	}
}

// testGrantOnce grants a checkout's credits as fulfilment does, many
// times at once from both instances: one entry, one balance.
func testGrantOnce(t *testing.T, a, b Instance) {
	ctx := t.Context()
	rec, err := a.Billing.RecordCheckout(ctx, checkout())
	if err != nil {
		t.Fatal(err)
	}
	ledgers := []*credits.Ledger{credits.New(a.Credits, nil), credits.New(b.Credits, nil)}
	const n = 16
	var wg sync.WaitGroup
	errs := make([]error, n)
	replayed := make([]bool, n)
	for i := range n {
		wg.Go(func() {
			c, err := []billing.Store{a.Billing, b.Billing}[i%2].Checkout(ctx, rec.ID)
			if err != nil {
				errs[i] = err
				return
			}
			e, err := ledgers[i%2].GrantCredits(ctx, credits.GrantParams{
				AccountID: c.AccountID, Credits: c.Pack.Credits,
				Note: "purchase " + c.ID, IdempotencyKey: billing.GrantKey(c.ID),
			})
			errs[i], replayed[i] = err, e.Replayed
		})
	}
	wg.Wait()
	fresh := 0
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("grant %d: %v", i, errs[i])
		}
		if !replayed[i] {
			fresh++
		}
	}
	if fresh != 1 {
		t.Fatalf("%d grants applied, want 1", fresh)
	}
	for _, l := range ledgers {
		if bal, err := l.Balance(ctx, rec.AccountID); err != nil || bal != rec.Pack.Credits {
			t.Fatalf("balance %d, %v; want %d", bal, err, rec.Pack.Credits)
		}
	}
}

func testCanceled(t *testing.T, a, _ Instance) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	c := checkout()
	if _, err := a.Billing.RecordCheckout(ctx, c); !errors.Is(err, context.Canceled) {
		t.Fatalf("RecordCheckout on a canceled context: %v", err)
	}
	if _, err := a.Billing.Checkout(t.Context(), c.ID); !errors.Is(err, billing.ErrNotFound) {
		t.Fatalf("a canceled record was kept: %v", err)
	}
}
