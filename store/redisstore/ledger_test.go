package redisstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/store/redisstore"
)

// A history written before the store kept totals (here: its totals key
// removed) is counted once, by the backfill, while charges keep coming;
// no entry is missed or counted twice, and later charges are counted as
// they happen.
func TestTotalsBackfill(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, c, _ := setup(t, nil)
	l := credits.New(s, nil)
	const acct = "A"
	if _, err := l.Grant(ctx, acct, 1000, ""); err != nil {
		t.Fatal(err)
	}
	apply := func(i int) {
		t.Helper()
		var err error
		switch i % 3 {
		case 0:
			_, err = l.Charge(ctx, acct, 2, fmt.Sprint("c", i))
		case 1:
			_, err = l.Refund(ctx, acct, 1, fmt.Sprint("r", i))
		default:
			_, err = l.Grant(ctx, acct, 1, "")
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := range 30 {
		apply(i)
	}
	// A reason of the caller's that JSON escapes, and a reference that
	// looks like the fields the backfill reads.
	odd := credits.Change{AccountID: acct, Delta: 4, Reason: `a "quoted" \ reason`, Reference: `","t":"1","delta":"-99","reason":"x`}
	if _, err := s.Apply(ctx, odd); err != nil {
		t.Fatal(err)
	}
	if err := c.Del(ctx, redisstore.KeyOf(s, acct, "ctot:"+acct)).Err(); err != nil {
		t.Fatal(err)
	}
	check := func() {
		t.Helper()
		from, to := time.Now().AddDate(0, 0, -1), time.Now().AddDate(0, 0, 2)
		got, err := l.Totals(ctx, credits.TotalsParams{AccountID: acct, From: from, To: to})
		if err != nil {
			t.Fatal(err)
		}
		hist, err := l.History(ctx, acct)
		if err != nil {
			t.Fatal(err)
		}
		want := credits.TotalsOf(hist, credits.TotalsParams{From: credits.Day(from), To: credits.Day(to)})
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("totals %v, want %v", got, want)
		}
	}
	// Charges between the backfill's steps are left to it.
	for i := 30; ; i++ {
		left, err := redisstore.BackfillTotalsStep(ctx, s, acct, 7)
		if err != nil {
			t.Fatal(err)
		}
		if left == 0 {
			break
		}
		apply(i)
		if i > 200 {
			t.Fatal("the backfill does not catch up")
		}
	}
	check()
	for i := range 10 {
		apply(i + 1000)
	}
	check()
	// A fresh start of the same: Totals backfills on its own, here on
	// three readers at once (two instances on one server) while charges
	// go on, over more than one script's share of entries.
	for i := range 2500 {
		apply(i + 2000)
	}
	if err := c.Del(ctx, redisstore.KeyOf(s, acct, "ctot:"+acct)).Err(); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			if _, err := l.Totals(ctx, credits.TotalsParams{AccountID: acct, From: time.Now(), To: time.Now().AddDate(0, 0, 1)}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Go(func() {
		for i := range 50 {
			if _, err := l.Grant(ctx, acct, 1, fmt.Sprint("during-", i)); err != nil {
				t.Error(err)
			}
		}
	})
	wg.Wait()
	check()
}
