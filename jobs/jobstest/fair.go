package jobstest

// The fair order between accounts (see jobs.Driver's Lease).

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/jobs"
)

// leaseAll leases max jobs at a time until none is left, completing
// nothing, and returns the leases in the order they were handed out.
func leaseAll(t *testing.T, b *bundle, max int) []jobs.Lease {
	t.Helper()
	var out []jobs.Lease
	for range 10_000 {
		ls := mustLease(t, b, max, time.Minute)
		if len(ls) == 0 {
			return out
		}
		out = append(out, ls...)
	}
	t.Fatal("the queue never ran dry")
	return nil
}

// testFairAcrossAccounts: an account's long backlog does not hold up the
// jobs another account enqueues after it; each account's jobs come out in
// enqueue order.
func testFairAcrossAccounts(t *testing.T, b *bundle) {
	big, small1, small2 := account(), account(), account()
	bigIDs := mustEnqueue(t, b, big, 300)
	ids1 := mustEnqueue(t, b, small1, 10)
	ids2 := mustEnqueue(t, b, small2, 10)
	got := leaseAll(t, b, 4)
	if len(got) != 320 {
		t.Fatalf("leased %d jobs, want 320", len(got))
	}
	byAccount := map[string][]string{}
	lastSmall := 0
	for i, l := range got {
		byAccount[l.AccountID] = append(byAccount[l.AccountID], l.ID)
		if l.AccountID != big {
			lastSmall = i + 1
		}
	}
	// Alternating one job each, the two small accounts' 20 jobs are out
	// within about 60 leased; first come, first served they would wait
	// for all 300 of the big account's. Some slack for drivers that
	// alternate by rounds (shards) rather than by job.
	if lastSmall > 80 {
		t.Errorf("the small accounts' last job was the %dth leased; want within the first 80 (the big account enqueued 300 first)", lastSmall)
	}
	for acct, want := range map[string][]string{big: bigIDs, small1: ids1, small2: ids2} {
		if !slices.Equal(byAccount[acct], want) {
			t.Errorf("account's jobs leased in the order %v, want enqueue order %v", byAccount[acct], want)
		}
	}
}

// testRetryTakesNewTurn: a job retried after a failure, or deferred, waits
// behind its account's other jobs; one handed back at once without an
// error keeps its place.
func testRetryTakesNewTurn(t *testing.T, b *bundle) {
	ctx := context.Background()
	acct := account()
	ids := mustEnqueue(t, b, acct, 4)
	l := mustLease(t, b, 1, time.Minute)
	if len(l) != 1 || l[0].ID != ids[0] {
		t.Fatalf("first lease %+v, want job %s", l, ids[0])
	}
	if err := b.Driver.Retry(ctx, jobs.RetryParams{ID: l[0].ID, Token: l[0].Token, Error: "boom"}); err != nil {
		t.Fatal(err)
	}
	l = mustLease(t, b, 1, time.Minute)
	if len(l) != 1 || l[0].ID != ids[1] {
		t.Fatalf("lease after a failed attempt %+v, want job %s (the failed one waits behind the others)", l, ids[1])
	}
	if err := b.Driver.Retry(ctx, jobs.RetryParams{ID: l[0].ID, Token: l[0].Token}); err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, l := range leaseAll(t, b, 10) {
		order = append(order, l.ID)
	}
	if want := []string{ids[1], ids[2], ids[3], ids[0]}; !slices.Equal(order, want) {
		t.Fatalf("leased in the order %v, want %v: a job handed back keeps its place, a failed one goes last", order, want)
	}
}

// testPoolServesQuietAccount: with a pool working through one account's
// long list, another account's small batch is done long before the list
// is: the pool takes the accounts' jobs in turn.
func testPoolServesQuietAccount(t *testing.T, b *bundle) {
	ctx := context.Background()
	big, quiet := account(), account()
	const bigN, quietN = 3000, 10
	for i := 0; i < bigN; i += 1000 {
		if _, err := b.q.Enqueue(ctx, big, emails(1000, big+"-"+string(rune('a'+i/1000)))); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	done := map[string]int{}
	bigDoneWhenQuietDone := -1
	quietDone := make(chan struct{})
	stop := runPool(t, b, validatorFunc(func(ctx context.Context, email string) (emailcheck.Result, error) {
		// Each job takes a moment, as a DNS round trip does.
		time.Sleep(200 * time.Microsecond)
		return likely(ctx, email)
	}), &jobs.PoolConfig{Workers: 4, PollInterval: 50 * time.Millisecond, OnComplete: func(_ context.Context, j jobs.Job) {
		mu.Lock()
		defer mu.Unlock()
		done[j.AccountID]++
		if j.AccountID == quiet && done[quiet] == quietN {
			bigDoneWhenQuietDone = done[big]
			close(quietDone)
		}
	}})
	defer stop()
	// The quiet account arrives once the pool is busy with the list.
	waitFor(t, time.Minute, "the list's first completions", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return done[big] >= 50
	})
	if _, err := b.q.Enqueue(ctx, quiet, emails(quietN, quiet)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-quietDone:
	case <-time.After(2 * time.Minute):
		t.Fatal("the quiet account's batch did not complete")
	}
	mu.Lock()
	defer mu.Unlock()
	// Served in turn, the quiet batch waits for the jobs already leased
	// (a few dozen) and about as many of the list's as its own; first
	// come, first served it would wait for the whole list.
	if bigDoneWhenQuietDone > bigN/2 {
		t.Errorf("the list had %d of %d jobs done when the quiet account's %d were; want the quiet batch served in turn", bigDoneWhenQuietDone, bigN, quietN)
	}
	t.Logf("the list had %d of %d jobs done when the quiet account's %d were", bigDoneWhenQuietDone, bigN, quietN)
}

// testLeaseLater: the jobs of the accounts a lease names as served later
// come after every other account's ready jobs.
func testLeaseLater(t *testing.T, b *bundle) {
	ctx := context.Background()
	slow, other := account(), account()
	slowIDs := mustEnqueue(t, b, slow, 10)
	otherIDs := mustEnqueue(t, b, other, 10)
	lease := func(max int) []string {
		t.Helper()
		ls, err := b.Driver.Lease(ctx, jobs.LeaseParams{Max: max, Duration: time.Minute, Later: []string{slow}})
		if err != nil {
			t.Fatal(err)
		}
		ids := make([]string, len(ls))
		for i, l := range ls {
			ids[i] = l.ID
		}
		return ids
	}
	if got := lease(6); !slices.Equal(got, otherIDs[:6]) {
		t.Fatalf("leased %v, want the other account's first 6 %v", got, otherIDs[:6])
	}
	got := lease(10)
	if len(got) != 10 || !slices.Equal(got[:4], otherIDs[6:]) || !slices.Equal(got[4:], slowIDs[:6]) {
		t.Fatalf("leased %v, want the other account's last 4 %v, then the later account's first 6 %v", got, otherIDs[6:], slowIDs[:6])
	}
}

// testListTakesTurns: a list's jobs take turns with the jobs of other
// accounts as a batch's do.
func testListTakesTurns(t *testing.T, b *bundle) {
	if _, ok := b.Driver.(jobs.ListDriver); !ok {
		t.Skip("the driver has no lists")
	}
	ctx := context.Background()
	big, small := account(), account()
	rows := make([]jobs.ListRow, 200)
	for i := range rows {
		e := fmt.Sprintf("row%d@example.org", i)
		rows[i] = jobs.ListRow{N: i, Record: []string{e}, Email: e, Key: e}
	}
	w, err := b.q.BeginList(ctx, jobs.BeginListParams{AccountID: big, Header: []string{"email"}, Rows: len(rows)})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Append(ctx, rows); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	mustEnqueue(t, b, small, 10)
	got := leaseAll(t, b, 4)
	if len(got) != 210 {
		t.Fatalf("leased %d jobs, want 210", len(got))
	}
	last := 0
	for i, l := range got {
		if l.AccountID == small {
			last = i + 1
		}
	}
	if last > 40 {
		t.Errorf("the small batch's last job was the %dth leased, after a list of 200 committed before it; want within the first 40", last)
	}
}
