package jobstest

// The fair order between accounts (see jobsdriver.Driver's Lease).

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/jobs"
	"github.com/validmail/validmail/jobs/jobsdriver"
	"github.com/validmail/validmail/jobs/jobtype"
)

// leaseAll leases max jobs at a time until none is left, completing
// nothing, and returns the leases in the order they were handed out.
func leaseAll(t *testing.T, b *bundle, max int) []jobsdriver.Lease {
	t.Helper()
	var out []jobsdriver.Lease
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
	if err := b.Driver.Retry(ctx, jobsdriver.RetryParams{ID: l[0].ID, Token: l[0].Token, Error: "boom"}); err != nil {
		t.Fatal(err)
	}
	l = mustLease(t, b, 1, time.Minute)
	if len(l) != 1 || l[0].ID != ids[1] {
		t.Fatalf("lease after a failed attempt %+v, want job %s (the failed one waits behind the others)", l, ids[1])
	}
	if err := b.Driver.Retry(ctx, jobsdriver.RetryParams{ID: l[0].ID, Token: l[0].Token}); err != nil {
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
	}), &jobs.PoolConfig{Workers: 4, PollInterval: 50 * time.Millisecond, OnComplete: func(_ context.Context, j jobtype.Job) {
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

// testNewcomerNoHeadStart: an account that joins starts at the queue's
// position, the latest turn handed out: a job of another account that
// waited for a later run-at, with an old turn, does not make the
// newcomer jump ahead of the accounts already waiting.
func testNewcomerNoHeadStart(t *testing.T, b *bundle) {
	ctx := context.Background()
	big, delayed, newcomer := account(), account(), account()
	mustEnqueue(t, b, big, 600)
	dIDs := mustEnqueue(t, b, delayed, 1)
	var held jobsdriver.Lease
	// Lease until the delayed account's job is out, then defer it.
	for held.ID == "" {
		ls := mustLease(t, b, 2, time.Minute)
		if len(ls) == 0 {
			t.Fatal("the delayed account's job was never leased")
		}
		for _, l := range ls {
			if l.ID == dIDs[0] {
				held = l
			}
		}
	}
	due := time.Now().Add(300 * time.Millisecond)
	if err := b.Driver.Retry(ctx, jobsdriver.RetryParams{ID: held.ID, Token: held.Token, RunAt: due}); err != nil {
		t.Fatal(err)
	}
	// The queue moves on, and the deferred job comes due.
	if n := len(mustLease(t, b, 300, time.Minute)); n != 300 {
		t.Fatalf("leased %d of the big account's jobs, want 300", n)
	}
	time.Sleep(time.Until(due) + 50*time.Millisecond)
	mustEnqueue(t, b, newcomer, 200)
	count := map[string]int{}
	for _, l := range mustLease(t, b, 200, time.Minute) {
		count[l.AccountID]++
	}
	// Alternating, the newcomer and the big account get about 100 each
	// (a driver that takes turns by shard may give a shard its share).
	if count[newcomer] > 130 || count[big] < 70 {
		t.Errorf("a lease of 200 after the newcomer joined gave it %d and the account already waiting %d; want them to alternate", count[newcomer], count[big])
	}
}

// testDueJobsTakeTurns: jobs deferred together take their turns when
// they come due, behind the jobs other accounts have waiting then, not
// the places they had when deferred: an account whose lookups all time
// out does not take the whole queue each time its retries come due.
func testDueJobsTakeTurns(t *testing.T, b *bundle) {
	ctx := context.Background()
	busy, deferred := account(), account()
	const deferredN = 40
	mustEnqueue(t, b, busy, 600)
	mustEnqueue(t, b, deferred, deferredN)
	held := map[string]jobsdriver.Lease{}
	for len(held) < deferredN {
		ls := mustLease(t, b, 20, time.Minute)
		if len(ls) == 0 {
			t.Fatalf("only %d of the deferred account's jobs were leased", len(held))
		}
		for _, l := range ls {
			if l.AccountID == deferred {
				held[l.ID] = l
			}
		}
	}
	due := time.Now().Add(time.Second)
	for _, l := range held {
		if err := b.Driver.Retry(ctx, jobsdriver.RetryParams{ID: l.ID, Token: l.Token, RunAt: due}); err != nil {
			t.Fatal(err)
		}
	}
	// The queue moves on while they wait.
	if n := len(mustLease(t, b, 200, time.Minute)); n != 200 {
		t.Fatalf("leased %d of the busy account's jobs, want 200", n)
	}
	time.Sleep(time.Until(due) + 50*time.Millisecond)
	count := map[string]int{}
	for _, l := range mustLease(t, b, deferredN, time.Minute) {
		count[l.AccountID]++
	}
	// Taking turns, each account gets about half; with the places they
	// had when deferred, the deferred jobs would all come first.
	if count[deferred] > deferredN*7/10 || count[busy] < deferredN*3/10 {
		t.Errorf("a lease of %d after the deferred jobs came due gave them %d and the busy account %d; want them to take turns", deferredN, count[deferred], count[busy])
	}
}

// testDeferredIntoThePast: a job handed back for a run-at the driver's
// clock has already passed (the caller's clock lags) is still handed back
// for later: it takes a new turn behind its account's jobs, not its old
// place ahead of them.
func testDeferredIntoThePast(t *testing.T, b *bundle) {
	ctx := context.Background()
	acct := account()
	ids := mustEnqueue(t, b, acct, 3)
	l := mustLease(t, b, 1, time.Minute)
	if len(l) != 1 || l[0].ID != ids[0] {
		t.Fatalf("first lease %+v, want job %s", l, ids[0])
	}
	if err := b.Driver.Retry(ctx, jobsdriver.RetryParams{ID: l[0].ID, Token: l[0].Token, RunAt: time.Now().Add(-time.Hour)}); err != nil {
		t.Fatal(err)
	}
	var order []string
	deadline := time.Now().Add(time.Minute)
	for len(order) < len(ids) {
		if time.Now().After(deadline) {
			t.Fatalf("leased %v in a minute, want all of %v", order, ids)
		}
		ls := mustLease(t, b, 10, time.Minute)
		for _, l := range ls {
			order = append(order, l.ID)
		}
		if len(ls) == 0 {
			time.Sleep(5 * time.Millisecond)
		}
	}
	if want := []string{ids[1], ids[2], ids[0]}; !slices.Equal(order, want) {
		t.Fatalf("leased in the order %v, want %v: a job deferred goes behind its account's others", order, want)
	}
}

// testListTakesTurns: a list's jobs take turns with the jobs of other
// accounts as a batch's do.
func testListTakesTurns(t *testing.T, b *bundle) {
	if _, ok := b.Driver.(jobsdriver.ListDriver); !ok {
		t.Skip("the driver has no lists")
	}
	ctx := context.Background()
	big, small := account(), account()
	rows := make([]jobtype.ListRow, 200)
	for i := range rows {
		e := fmt.Sprintf("row%d@example.org", i)
		rows[i] = jobtype.ListRow{N: i, Record: []string{e}, Email: e, Key: e}
	}
	w, err := b.q.BeginList(ctx, jobtype.BeginListParams{AccountID: big, Header: []string{"email"}, Rows: len(rows)})
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

// testDeferManyIndependent: a BatchDeferrer hands each job back as Retry
// would alone: a wrong token or an unknown job fails its own item only,
// and the jobs deferred come back once due, with no attempt counted.
func testDeferManyIndependent(t *testing.T, b *bundle) {
	bd, ok := b.Driver.(jobsdriver.BatchDeferrer)
	if !ok {
		t.Skip("the driver defers jobs one by one")
	}
	ctx := context.Background()
	acct := account()
	mustEnqueue(t, b, acct, 3)
	ls := mustLease(t, b, 3, time.Minute)
	if len(ls) != 3 {
		t.Fatalf("leased %d jobs, want 3", len(ls))
	}
	soon := time.Now().Add(200 * time.Millisecond)
	errs := bd.DeferMany(ctx, []jobsdriver.RetryParams{
		{ID: ls[0].ID, Token: ls[0].Token, RunAt: soon},
		{ID: ls[1].ID, Token: "not-the-token", RunAt: soon},
		{ID: "999999999999", Token: "x", RunAt: soon},
		{ID: ls[2].ID, Token: ls[2].Token, RunAt: time.Now().Add(-time.Hour)},
	})
	if len(errs) != 4 || errs[0] != nil || !errors.Is(errs[1], jobtype.ErrLeaseLost) || !errors.Is(errs[2], jobtype.ErrNotFound) || errs[3] != nil {
		t.Fatalf("DeferMany: %v; want nil, ErrLeaseLost, ErrNotFound, nil", errs)
	}
	back := map[string]jobsdriver.Lease{}
	deadline := time.Now().Add(time.Minute)
	for len(back) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("only %v came back in a minute, want %s and %s", back, ls[0].ID, ls[2].ID)
		}
		for _, l := range mustLease(t, b, 10, time.Minute) {
			back[l.ID] = l
		}
		time.Sleep(5 * time.Millisecond)
	}
	for _, id := range []string{ls[0].ID, ls[2].ID} {
		l, ok := back[id]
		if !ok {
			t.Fatalf("came back %v, want %s", back, id)
		}
		if l.Errors != 0 {
			t.Errorf("job %s came back with %d errors, want none counted", id, l.Errors)
		}
	}
	if _, again := back[ls[1].ID]; again {
		t.Errorf("job %s, deferred with a wrong token, was leased twice", ls[1].ID)
	}
}
