package storetest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/validmail/validmail/store"
	"github.com/validmail/validmail/store/backend"
)

// runNotices runs the notices suite on the backend's Notices, with two
// instances over one namespace when the backend is durable, else with
// the one backend twice. A backend without Notices skips it.
func runNotices(t *testing.T, h Harness) {
	if h.New(t).Notices == nil {
		t.Skip("the backend keeps no notices")
	}
	pair := func(t *testing.T) (*backend.Backend, *backend.Backend) {
		if d := h.Durable; d != nil {
			ns := d.NewNamespace(t)
			return d.Open(t, ns), d.Open(t, ns)
		}
		b := h.New(t)
		return b, b
	}
	t.Run("Choice", func(t *testing.T) {
		t.Parallel()
		b, other := pair(t)
		testFinishMailChoice(t, b, other)
	})
	t.Run("Claims", func(t *testing.T) {
		t.Parallel()
		b, other := pair(t)
		testNoticeClaims(t, b.Notices, other.Notices)
	})
	t.Run("TwoInstances", func(t *testing.T) {
		t.Parallel()
		b, other := pair(t)
		testNoticesTwoInstances(t, b.Notices, other.Notices)
	})
}

// testFinishMailChoice: off until chosen, on and off again, read by the
// other instance; an unknown account is ErrNotFound.
func testFinishMailChoice(t *testing.T, b, other *backend.Backend) {
	ctx := context.Background()
	a := mustAccount(t, b, store.CreateAccountParams{})
	if on, err := b.Notices.FinishMail(ctx, a.ID); on || err != nil {
		t.Fatalf("a new account's choice: %v, %v", on, err)
	}
	for _, want := range []bool{true, true, false, true} {
		if err := b.Notices.SetFinishMail(ctx, a.ID, want); err != nil {
			t.Fatal(err)
		}
		if on, err := other.Notices.FinishMail(ctx, a.ID); on != want || err != nil {
			t.Fatalf("after choosing %v: %v, %v", want, on, err)
		}
	}
	if got, err := other.Accounts.GetAccount(ctx, a.ID); err != nil || got.Email != a.Email {
		t.Fatalf("the account after the choice: %+v, %v", got, err)
	}
	unknown := uuid.NewString()
	if _, err := b.Notices.FinishMail(ctx, unknown); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("FinishMail(unknown): %v", err)
	}
	if err := b.Notices.SetFinishMail(ctx, unknown, true); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("SetFinishMail(unknown): %v", err)
	}
}

// testNoticeClaims: a notice is added once, claimed once while its lease
// holds, claimed again after it, delayed, done, and never again, even
// when added again; a lost claim is ErrNoticeLost.
func testNoticeClaims(t *testing.T, n, other store.Notices) {
	ctx := context.Background()
	acct, batch := uuid.NewString(), "b-"+uuid.NewString()
	if err := n.AddNotice(ctx, acct, batch); err != nil {
		t.Fatal(err)
	}
	if err := other.AddNotice(ctx, acct, batch); err != nil {
		t.Fatal(err)
	}
	now := time.Now().Add(time.Second)
	claimed := mustClaim(t, n, now, 1)
	if c := claimed[0]; c.AccountID != acct || c.BatchID != batch || c.Token == "" || c.Attempts != 0 {
		t.Fatalf("the claim: %+v", c)
	}
	if got := claimNotices(t, other, now.Add(30*time.Second), time.Minute, 10); len(got) != 0 {
		t.Fatalf("claimed again while the lease holds: %+v", got)
	}
	// The lease runs out: the other instance claims it, and the first
	// claim is lost.
	again := mustClaim(t, other, now.Add(2*time.Minute), 1)
	if again[0].Token == claimed[0].Token || again[0].Attempts != 1 {
		t.Fatalf("the second claim: %+v after %+v", again[0], claimed[0])
	}
	if err := n.DoneNotice(ctx, claimed[0]); !errors.Is(err, store.ErrNoticeLost) {
		t.Fatalf("done with a lost claim: %v", err)
	}
	if err := n.DelayNotice(ctx, claimed[0], now); !errors.Is(err, store.ErrNoticeLost) {
		t.Fatalf("delay of a lost claim: %v", err)
	}
	// Delayed: due again only at its new time.
	due := now.Add(10 * time.Minute)
	if err := other.DelayNotice(ctx, again[0], due); err != nil {
		t.Fatal(err)
	}
	if got := claimNotices(t, n, due.Add(-time.Second), time.Minute, 10); len(got) != 0 {
		t.Fatalf("claimed before it is due: %+v", got)
	}
	third := mustClaim(t, n, due, 1)
	if third[0].Attempts != 2 {
		t.Errorf("attempts after a lost claim and a delay: %d", third[0].Attempts)
	}
	if err := n.DoneNotice(ctx, third[0]); err != nil {
		t.Fatal(err)
	}
	if err := n.DoneNotice(ctx, third[0]); !errors.Is(err, store.ErrNoticeLost) {
		t.Errorf("done twice: %v", err)
	}
	if err := other.AddNotice(ctx, acct, batch); err != nil {
		t.Fatal(err)
	}
	if got := claimNotices(t, other, due.Add(time.Hour), time.Minute, 10); len(got) != 0 {
		t.Fatalf("a done notice, added again, is claimed: %+v", got)
	}
	if err := n.DoneNotice(ctx, store.Notice{AccountID: acct, BatchID: "b-" + uuid.NewString(), Token: "x"}); !errors.Is(err, store.ErrNoticeLost) {
		t.Errorf("done with an unknown notice: %v", err)
	}
	if got := claimNotices(t, n, due.Add(time.Hour), time.Minute, 0); len(got) != 0 {
		t.Errorf("a claim of none: %+v", got)
	}
}

// testNoticesTwoInstances: two instances claim the same 50 notices at
// once, each claiming a few at a time: every notice is claimed by one
// of them exactly once.
func testNoticesTwoInstances(t *testing.T, a, b store.Notices) {
	ctx := context.Background()
	acct := uuid.NewString()
	want := map[string]bool{}
	for range 50 {
		id := "b-" + uuid.NewString()
		want[id] = true
		if err := a.AddNotice(ctx, acct, id); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now().Add(time.Second)
	var mu sync.Mutex
	got := map[string]int{}
	var wg sync.WaitGroup
	for _, n := range []store.Notices{a, b, a, b} {
		wg.Go(func() {
			for {
				cs, err := n.ClaimNotices(ctx, now, time.Hour, 3)
				if err != nil {
					t.Error(err)
					return
				}
				if len(cs) == 0 {
					return
				}
				for _, c := range cs {
					if err := n.DoneNotice(ctx, c); err != nil {
						t.Error(err)
					}
					mu.Lock()
					got[c.BatchID]++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	mine := 0
	for id, k := range got {
		if !want[id] {
			continue
		}
		mine++
		if k != 1 {
			t.Errorf("notice %s claimed %d times", id, k)
		}
	}
	if mine != len(want) {
		t.Errorf("%d of %d notices claimed", mine, len(want))
	}
}

func claimNotices(t *testing.T, n store.Notices, now time.Time, lease time.Duration, limit int) []store.Notice {
	t.Helper()
	got, err := n.ClaimNotices(context.Background(), now, lease, limit)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func mustClaim(t *testing.T, n store.Notices, now time.Time, want int) []store.Notice {
	t.Helper()
	got := claimNotices(t, n, now, time.Minute, 10)
	if len(got) != want {
		t.Fatalf("claimed %d notices, want %d: %+v", len(got), want, got)
	}
	return got
}
