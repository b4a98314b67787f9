package creditstest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/validmail/validmail/credits"
)

// pageAll reads the account's whole history through HistoryPage with
// pages of limit, newest first, failing t on a page out of order, a
// duplicate, or a page beyond limit.
func pageAll(t *testing.T, l *credits.Ledger, acct string, limit int) []credits.Entry {
	t.Helper()
	ctx := context.Background()
	var out []credits.Entry
	seen := map[string]bool{}
	before := ""
	for pages := 0; ; pages++ {
		if pages > 10000 {
			t.Fatal("paging does not end")
		}
		p, err := l.HistoryPage(ctx, credits.PageParams{AccountID: acct, Before: before, Limit: limit})
		if err != nil {
			t.Fatalf("HistoryPage(before %q): %v", before, err)
		}
		if len(p.Entries) > limit {
			t.Fatalf("page of %d entries, limit %d", len(p.Entries), limit)
		}
		if p.More && len(p.Entries) != limit {
			t.Fatalf("a page with more after it holds %d entries, limit %d", len(p.Entries), limit)
		}
		for _, e := range p.Entries {
			if seen[e.ID] {
				t.Fatalf("entry %s on two pages", e.ID)
			}
			seen[e.ID] = true
			if n := len(out); n > 0 && !idLess(e.ID, out[n-1].ID) {
				t.Fatalf("entry %s after %s: not newest first", e.ID, out[n-1].ID)
			}
			if e.AccountID != acct || e.Replayed {
				t.Fatalf("page entry %+v", e)
			}
			out = append(out, e)
		}
		if !p.More {
			return out
		}
		before = p.Entries[len(p.Entries)-1].ID
	}
}

// idLess reports whether entry id a is below b.
func idLess(a, b string) bool {
	x, err1 := strconv.ParseUint(a, 10, 64)
	y, err2 := strconv.ParseUint(b, 10, 64)
	return err1 == nil && err2 == nil && x < y
}

// sameEntries fails t unless got holds want's entries, in want's order.
func sameEntries(t *testing.T, got, want []credits.Entry) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d entries, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.ID != w.ID || g.Delta != w.Delta || g.Reason != w.Reason || g.Reference != w.Reference ||
			g.IdempotencyKey != w.IdempotencyKey || !g.Time.Equal(w.Time) || g.AccountID != w.AccountID {
			t.Fatalf("entry %d: %+v, want %+v", i, g, w)
		}
	}
}

// fill writes n entries to acct: a grant, then charges and refunds.
func fill(t *testing.T, l *credits.Ledger, acct string, n int) {
	t.Helper()
	ctx := context.Background()
	if _, err := l.Grant(ctx, acct, int64(n), ""); err != nil {
		t.Fatal(err)
	}
	for i := 1; i < n; i++ {
		var err error
		if i%3 == 2 {
			_, err = l.Refund(ctx, acct, 1, fmt.Sprintf("r-%s-%d", acct, i))
		} else {
			_, err = l.Charge(ctx, acct, 2, fmt.Sprintf("c-%d", i))
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

func testPageOrder(t *testing.T, l *credits.Ledger, _ credits.Store) {
	ctx := context.Background()
	acct := account()
	p, err := l.HistoryPage(ctx, credits.PageParams{AccountID: acct})
	if err != nil || len(p.Entries) != 0 || p.More {
		t.Fatalf("page of a new account: %+v, %v", p, err)
	}
	fill(t, l, acct, 23)
	fill(t, l, account(), 5) // another account's entries interleave nowhere
	hist, err := l.History(ctx, acct)
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Clone(hist)
	slices.Reverse(want)
	for _, limit := range []int{1, 2, 7, 22, 23, 24, 1000} {
		sameEntries(t, pageAll(t, l, acct, limit), want)
	}
	// The default limit, and a cursor past every entry.
	p, err = l.HistoryPage(ctx, credits.PageParams{AccountID: acct, Before: "9223372036854775807"})
	if err != nil || p.More || len(p.Entries) != len(want) {
		t.Fatalf("default page: %d entries, more %v, %v", len(p.Entries), p.More, err)
	}
	sameEntries(t, p.Entries, want)
	// A cursor below every entry: an empty last page.
	p, err = l.HistoryPage(ctx, credits.PageParams{AccountID: acct, Before: want[len(want)-1].ID, Limit: 5})
	if err != nil || p.More || len(p.Entries) != 0 {
		t.Fatalf("page before the first entry: %+v, %v", p, err)
	}
	// A cursor that is no entry of the account still pages by id.
	mid, _ := strconv.ParseUint(want[10].ID, 10, 64)
	p, err = l.HistoryPage(ctx, credits.PageParams{AccountID: acct, Before: strconv.FormatUint(mid+1, 10), Limit: 3})
	if err != nil || len(p.Entries) != 3 || p.Entries[0].ID != want[10].ID {
		t.Fatalf("page before %d: %+v, %v", mid+1, p, err)
	}
}

// A cursor keeps naming the same place while entries are written: the
// next page is the same before and after, and a reader paging through a
// history being written neither repeats nor skips an entry that was
// there when it began.
func testPageWhileWriting(t *testing.T, l *credits.Ledger, _ credits.Store) {
	ctx := context.Background()
	acct := account()
	fill(t, l, acct, 40)
	first, err := l.HistoryPage(ctx, credits.PageParams{AccountID: acct, Limit: 10})
	if err != nil || !first.More {
		t.Fatalf("first page: %+v, %v", first, err)
	}
	cursor := first.Entries[9].ID
	second, err := l.HistoryPage(ctx, credits.PageParams{AccountID: acct, Before: cursor, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	before, err := l.History(ctx, acct)
	if err != nil {
		t.Fatal(err)
	}

	done := make(chan struct{})
	var wg sync.WaitGroup
	// Each writer writes a bounded number of entries, so that paging a
	// fast store ends however far the writers got.
	for w := range 4 {
		wg.Go(func() {
			for i := range 500 {
				select {
				case <-done:
					return
				default:
				}
				if _, err := l.Grant(ctx, acct, 1, fmt.Sprintf("w%d-%d", w, i)); err != nil {
					t.Errorf("grant: %v", err)
					return
				}
			}
		})
	}
	// Page through while the writers write, one entry a page so that
	// many writes land between pages.
	var got []credits.Entry
	for range 3 {
		got = pageAll(t, l, acct, 1)
	}
	again, err := l.HistoryPage(ctx, credits.PageParams{AccountID: acct, Before: cursor, Limit: 10})
	close(done)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	sameEntries(t, again.Entries, second.Entries)
	// Every entry there before the paging began is in it, once.
	ids := map[string]bool{}
	for _, e := range got {
		ids[e.ID] = true
	}
	for _, e := range before {
		if !ids[e.ID] {
			t.Fatalf("entry %s, written before the paging began, was skipped", e.ID)
		}
	}
	// Once the writes have ended, the pages are the history.
	hist := checkSum(t, l, acct, sumOf(t, l, acct))
	slices.Reverse(hist)
	sameEntries(t, pageAll(t, l, acct, 13), hist)
}

func sumOf(t *testing.T, l *credits.Ledger, acct string) int64 {
	t.Helper()
	bal, err := l.Balance(context.Background(), acct)
	if err != nil {
		t.Fatal(err)
	}
	return bal
}

func testPageBadParams(t *testing.T, l *credits.Ledger, s credits.Store) {
	ctx := context.Background()
	acct := account()
	fill(t, l, acct, 3)
	for _, c := range []string{"x", "-1", "0", "007", "+5", "1e3", " 5", "5 ", "1.0", "0x10",
		"9223372036854775808", "99999999999999999999999", "5\x00", "\xff\xfe", "٣"} {
		if _, err := l.HistoryPage(ctx, credits.PageParams{AccountID: acct, Before: c, Limit: 5}); !errors.Is(err, credits.ErrInvalidCursor) {
			t.Errorf("cursor %q: %v, want ErrInvalidCursor", c, err)
		}
		if ps, ok := s.(credits.PageStore); ok {
			// A store checks the cursor too, whoever calls it.
			if _, err := ps.HistoryPage(ctx, credits.PageParams{AccountID: acct, Before: c, Limit: 5}); !errors.Is(err, credits.ErrInvalidCursor) {
				t.Errorf("store, cursor %q: %v, want ErrInvalidCursor", c, err)
			}
		}
	}
	for _, n := range []int{-1, credits.MaxPageLimit + 1} {
		if _, err := l.HistoryPage(ctx, credits.PageParams{AccountID: acct, Limit: n}); !errors.Is(err, credits.ErrInvalidAmount) {
			t.Errorf("limit %d: %v, want ErrInvalidAmount", n, err)
		}
	}
	if _, err := l.HistoryPage(ctx, credits.PageParams{Limit: 5}); !errors.Is(err, credits.ErrInvalidAmount) {
		t.Errorf("no account: %v, want ErrInvalidAmount", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := l.HistoryPage(cctx, credits.PageParams{AccountID: acct}); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled context: %v, want context.Canceled", err)
	}
}

// wantTotals adds up hist as the totals of [from, to) should hold it.
func wantTotals(hist []credits.Entry, from, to time.Time) map[string]credits.DayTotal {
	out := map[string]credits.DayTotal{}
	for _, t := range credits.TotalsOf(hist, credits.TotalsParams{From: from, To: to}) {
		out[t.Day.Format(time.DateOnly)+" "+string(t.Reason)] = t
	}
	return out
}

// checkTotals fails t unless the account's totals over the days around
// now equal the sums of its history.
func checkTotals(t *testing.T, l *credits.Ledger, acct string) []credits.DayTotal {
	t.Helper()
	ctx := context.Background()
	// Yesterday to tomorrow: a test running across midnight has entries on
	// two days, and a store's clock may run ahead of this one.
	from, to := time.Now().AddDate(0, 0, -1), time.Now().AddDate(0, 0, 2)
	got, err := l.Totals(ctx, credits.TotalsParams{AccountID: acct, From: from, To: to})
	if err != nil {
		t.Fatalf("Totals: %v", err)
	}
	hist, err := l.History(ctx, acct)
	if err != nil {
		t.Fatal(err)
	}
	want := wantTotals(hist, credits.Day(from), credits.Day(to))
	if len(got) != len(want) {
		t.Fatalf("totals %+v, want %+v", got, want)
	}
	for i, g := range got {
		if i > 0 && !(got[i-1].Day.Before(g.Day) || (got[i-1].Day.Equal(g.Day) && got[i-1].Reason < g.Reason)) {
			t.Fatalf("totals out of order: %+v", got)
		}
		if g.Day.Location() != time.UTC || !g.Day.Equal(credits.Day(g.Day)) {
			t.Fatalf("total's day %v is not a UTC midnight", g.Day)
		}
		w, ok := want[g.Day.Format(time.DateOnly)+" "+string(g.Reason)]
		if !ok || w.Sum != g.Sum || w.Count != g.Count {
			t.Fatalf("total %+v, want %+v (history %d entries)", g, w, len(hist))
		}
	}
	return got
}

func testTotals(t *testing.T, l *credits.Ledger, s credits.Store) {
	ctx := context.Background()
	acct := account()
	if got := checkTotals(t, l, acct); len(got) != 0 {
		t.Fatalf("totals of a new account: %+v", got)
	}
	fill(t, l, acct, 20)
	fill(t, l, account(), 7)
	// A refused charge and a replayed one count nothing.
	if _, err := l.Charge(ctx, acct, 1000, ""); !errors.Is(err, credits.ErrInsufficient) {
		t.Fatalf("overdraft: %v", err)
	}
	if e, err := l.Charge(ctx, acct, 2, "c-1"); err != nil || !e.Replayed {
		t.Fatalf("replayed charge: %+v, %v", e, err)
	}
	if _, err := s.Apply(ctx, credits.Change{AccountID: acct, Delta: 3, Reason: "gift: a:b", Reference: "x"}); err != nil {
		t.Fatal(err)
	}
	got := checkTotals(t, l, acct)
	reasons := map[credits.Reason]credits.DayTotal{}
	for _, g := range got {
		r := reasons[g.Reason]
		r.Sum, r.Count = r.Sum+g.Sum, r.Count+g.Count
		reasons[g.Reason] = r
	}
	// fill(20): a grant of 20, 13 charges of 2, 6 refunds of 1.
	if c := reasons[credits.ReasonCharge]; c.Sum != -26 || c.Count != 13 {
		t.Fatalf("charges total %+v, want -26 in 13", c)
	}
	if r := reasons[credits.ReasonRefund]; r.Sum != 6 || r.Count != 6 {
		t.Fatalf("refunds total %+v, want 6 in 6", r)
	}
	if g := reasons["gift: a:b"]; g.Sum != 3 || g.Count != 1 {
		t.Fatalf("a reason of the caller's: %+v", g)
	}
	// Days without entries are not there.
	past, err := l.Totals(ctx, credits.TotalsParams{AccountID: acct, From: time.Now().AddDate(0, -3, 0), To: time.Now().AddDate(0, 0, -2)})
	if err != nil || len(past) != 0 {
		t.Fatalf("totals of past days: %+v, %v", past, err)
	}
	// Ranges.
	now := time.Now()
	for _, r := range [][2]time.Time{
		{now, now.AddDate(0, 0, -1)},
		{now, now.AddDate(0, 0, credits.MaxTotalsDays+1)},
	} {
		if _, err := l.Totals(ctx, credits.TotalsParams{AccountID: acct, From: r[0], To: r[1]}); !errors.Is(err, credits.ErrInvalidRange) {
			t.Errorf("range %v: %v, want ErrInvalidRange", r, err)
		}
	}
	if got, err := l.Totals(ctx, credits.TotalsParams{AccountID: acct, From: now, To: now}); err != nil || len(got) != 0 {
		t.Errorf("an empty range: %+v, %v", got, err)
	}
	if _, err := l.Totals(ctx, credits.TotalsParams{From: now, To: now.AddDate(0, 0, 1)}); !errors.Is(err, credits.ErrInvalidAmount) {
		t.Errorf("no account: %v, want ErrInvalidAmount", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := l.Totals(cctx, credits.TotalsParams{AccountID: acct, From: now, To: now.AddDate(0, 0, 1)}); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled context: %v, want context.Canceled", err)
	}
}

// Totals under concurrent charges, refunds and grants, idempotent
// replays and refused overdrafts equal the sums of the history.
func testTotalsConcurrent(t *testing.T, l *credits.Ledger, _ credits.Store) {
	ctx := context.Background()
	acct := account()
	if _, err := l.Grant(ctx, acct, 200, ""); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 40 {
				var err error
				switch i % 4 {
				case 0, 1:
					_, err = l.Charge(ctx, acct, 3, fmt.Sprintf("c-%d", i%20)) // replays across workers
				case 2:
					_, err = l.Refund(ctx, acct, 1, fmt.Sprintf("r-%d-%d", w, i))
				default:
					_, err = l.Grant(ctx, acct, 2, "")
				}
				if err != nil && !errors.Is(err, credits.ErrInsufficient) {
					t.Errorf("worker %d, change %d: %v", w, i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	checkTotals(t, l, acct)
}
