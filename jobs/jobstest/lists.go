package jobstest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/jobs"
	"github.com/validmail/validmail/jobs/jobsdriver"
	"github.com/validmail/validmail/jobs/jobtype"
)

// RunLists checks that backends made by newBackend behave as
// [jobsdriver.ListDriver] promises: a list is invisible, uncharged and
// unleasable until its commit, whole after it, and gone without a trace
// when aborted, refused or abandoned; batches are numbered per account.
// Each subtest runs in parallel on its own backend.
func RunLists(t *testing.T, newBackend func(tb testing.TB) Backend) {
	tests := []struct {
		name string
		f    func(t *testing.T, l *listBundle)
	}{
		{"CommitChargesUniqueAddresses", testListCommit},
		{"InsufficientLeavesNothing", testListInsufficient},
		{"AbortedOrAbandonedLeavesNothing", testListAbort},
		{"Uncharged", testListUncharged},
		{"FreeAddressesFirst", testListFree},
		{"NoAddress", testListEmpty},
		{"BatchNumbers", testBatchNumbers},
		{"IdempotencyKey", testListIdempotency},
		{"DeleteList", testListDelete},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := newBackend(t).check(t)
			ld, ok := b.Driver.(jobsdriver.ListDriver)
			if !ok {
				t.Skip("the driver keeps no lists")
			}
			q, err := jobs.NewQueue(b.Driver, credits.New(b.Credits, nil), nil)
			if err != nil {
				t.Fatal(err)
			}
			tc.f(t, &listBundle{ld: ld, driver: b.Driver, q: q, ledger: credits.New(b.Credits, nil), ctx: t.Context()})
		})
	}
}

type listBundle struct {
	ld     jobsdriver.ListDriver
	driver jobsdriver.Driver
	q      *jobs.Queue
	ledger *credits.Ledger
	ctx    context.Context
}

// account returns a fresh account holding n credits.
func (l *listBundle) account(t *testing.T, n int64) string {
	t.Helper()
	a := uuid.NewString()
	if n > 0 {
		if _, err := l.ledger.Grant(l.ctx, a, n, ""); err != nil {
			t.Fatal(err)
		}
	}
	return a
}

func listRows(cells ...string) []jobtype.ListRow {
	out := make([]jobtype.ListRow, len(cells))
	for i, c := range cells {
		out[i] = jobtype.ListRow{N: i, Record: []string{c, "row " + string(rune('A'+i))}}
		if k := trimLower(c); k != "" && k != "junk" {
			out[i].Email, out[i].Key = trim(c), k
		}
	}
	return out
}

func trim(s string) string {
	for len(s) > 0 && s[0] == ' ' {
		s = s[1:]
	}
	for len(s) > 0 && s[len(s)-1] == ' ' {
		s = s[:len(s)-1]
	}
	return s
}

func trimLower(s string) string {
	b := []byte(trim(s))
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// stage begins a list of rows and appends them in chunks of two.
func (l *listBundle) stage(t *testing.T, account string, charge bool, rows []jobtype.ListRow) jobtype.ListWriter {
	t.Helper()
	return l.stageFree(t, account, charge, 0, rows)
}

// stageFree is stage with free addresses.
func (l *listBundle) stageFree(t *testing.T, account string, charge bool, free int, rows []jobtype.ListRow) jobtype.ListWriter {
	t.Helper()
	w, err := l.q.BeginList(l.ctx, jobtype.BeginListParams{
		AccountID: account, Name: "customers.csv", Header: []string{"email", "name"}, Column: 0, Rows: len(rows), Charge: charge, Free: free,
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(rows); i += 2 {
		if err := w.Append(l.ctx, rows[i:min(i+2, len(rows))]); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

// nothingVisible fails unless the account has no batch, balance bal and
// no job a worker can lease.
func (l *listBundle) nothingVisible(t *testing.T, account string, bal int64) {
	t.Helper()
	bs, err := l.q.Batches(l.ctx, jobtype.BatchesParams{AccountID: account, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(bs) != 0 {
		t.Fatalf("batches %+v; want none", bs)
	}
	if got, err := l.ledger.Balance(l.ctx, account); err != nil || got != bal {
		t.Fatalf("balance %d, %v; want %d", got, err, bal)
	}
	ls, err := l.driver.Lease(l.ctx, jobsdriver.LeaseParams{Max: 100, Duration: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if len(ls) != 0 {
		t.Fatalf("leased %d jobs of a list not committed", len(ls))
	}
}

func testListCommit(t *testing.T, l *listBundle) {
	a := l.account(t, 100)
	rows := listRows("a@example.org", " A@Example.ORG ", "junk", "b@example.org", "c@example.org", "b@example.org")
	w := l.stage(t, a, true, rows)
	l.nothingVisible(t, a, 100)
	info, err := w.Commit(l.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.Rows != 6 || info.Addresses != 3 || info.Duplicates != 2 || info.InvalidRows != 1 || info.Charged != 3 || info.Name != "customers.csv" {
		t.Fatalf("commit: %+v", info)
	}
	if err := w.Abort(l.ctx); err != nil {
		t.Fatalf("abort after commit: %v", err)
	}
	if got, _ := l.ledger.Balance(l.ctx, a); got != 97 {
		t.Fatalf("balance %d; want 97", got)
	}
	b, err := l.q.Batch(l.ctx, a, info.BatchID)
	if err != nil {
		t.Fatal(err)
	}
	if b.Total != 3 || b.Name != "customers.csv" || b.Number != 1 || b.State != jobtype.StateActive {
		t.Fatalf("batch %+v", b)
	}
	got, err := l.q.List(l.ctx, a, info.BatchID)
	if err != nil || got.Rows != 6 || got.Addresses != 3 || len(got.Header) != 2 || got.Header[1] != "name" || got.Charged != 3 {
		t.Fatalf("List: %+v, %v", got, err)
	}
	js, err := l.q.BatchJobs(l.ctx, jobtype.BatchJobsParams{AccountID: a, BatchID: info.BatchID, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(js) != 3 || js[0].Email != "a@example.org" || js[1].Email != "b@example.org" || js[2].Email != "c@example.org" || js[0].Cost != 1 {
		t.Fatalf("jobs %+v", js)
	}
	// Complete every job.
	for done := 0; done < 3; {
		ls, err := l.driver.Lease(l.ctx, jobsdriver.LeaseParams{Max: 10, Duration: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if len(ls) == 0 {
			t.Fatalf("%d of 3 jobs leased", done)
		}
		for _, le := range ls {
			res := emailcheck.Result{Email: le.Email}
			res.Confidence.Status = emailcheck.StatusLikely
			if err := l.driver.Complete(l.ctx, jobsdriver.CompleteParams{ID: le.ID, Token: le.Token, Result: res}); err != nil {
				t.Fatal(err)
			}
			done++
		}
	}
	page1, err := l.q.ListRows(l.ctx, jobtype.ListRowsParams{AccountID: a, BatchID: info.BatchID, After: -1, Limit: 4})
	if err != nil {
		t.Fatal(err)
	}
	page2, err := l.q.ListRows(l.ctx, jobtype.ListRowsParams{AccountID: a, BatchID: info.BatchID, After: 3, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	all := append(page1, page2...)
	if len(page1) != 4 || len(all) != 6 {
		t.Fatalf("pages of %d and %d rows", len(page1), len(page2))
	}
	for i, r := range all {
		if r.N != i || len(r.Record) != 2 || r.Record[0] != rows[i].Record[0] || r.Record[1] != rows[i].Record[1] {
			t.Fatalf("row %d: %+v; want %q", i, r, rows[i].Record)
		}
		if (r.Job == nil) != (i == 2) {
			t.Fatalf("row %d: job %+v", i, r.Job)
		}
		if r.Job != nil && (r.Job.State != jobtype.StateCompleted || r.Job.Result == nil || r.Job.BatchID != info.BatchID) {
			t.Fatalf("row %d: job %+v", i, r.Job)
		}
	}
	if all[0].Job.ID != all[1].Job.ID || all[3].Job.ID != all[5].Job.ID || all[3].Job.ID == all[4].Job.ID {
		t.Fatal("rows of one address do not share its job")
	}
	if b, _ := l.q.Batch(l.ctx, a, info.BatchID); b.State != jobtype.StateCompleted || b.Completed != 3 {
		t.Fatalf("batch after completions: %+v", b)
	}
	other := l.account(t, 0)
	if _, err := l.q.List(l.ctx, other, info.BatchID); !errors.Is(err, jobtype.ErrNotFound) {
		t.Fatalf("another account's List: %v", err)
	}
	if _, err := l.q.ListRows(l.ctx, jobtype.ListRowsParams{AccountID: other, BatchID: info.BatchID, After: -1, Limit: 5}); !errors.Is(err, jobtype.ErrNotFound) {
		t.Fatalf("another account's ListRows: %v", err)
	}
	if _, err := l.q.List(l.ctx, a, "999999999"); !errors.Is(err, jobtype.ErrNotFound) {
		t.Fatalf("unknown list: %v", err)
	}
}

func testListInsufficient(t *testing.T, l *listBundle) {
	a := l.account(t, 2)
	w := l.stage(t, a, true, listRows("a@example.org", "b@example.org", "c@example.org", "a@example.org"))
	_, err := w.Commit(l.ctx)
	var ie *credits.InsufficientError
	if !errors.As(err, &ie) || ie.Balance != 2 || ie.Required != 3 {
		t.Fatalf("commit beyond the balance: %v; want balance 2, required 3", err)
	}
	if err := w.Abort(l.ctx); err != nil {
		t.Fatal(err)
	}
	l.nothingVisible(t, a, 2)
	// Within the balance, the same account's list goes through.
	w = l.stage(t, a, true, listRows("a@example.org", "A@example.org"))
	if info, err := w.Commit(l.ctx); err != nil || info.Charged != 1 {
		t.Fatalf("commit: %+v, %v", info, err)
	}
}

func testListAbort(t *testing.T, l *listBundle) {
	a := l.account(t, 10)
	w := l.stage(t, a, true, listRows("a@example.org", "b@example.org", "junk"))
	if err := w.Abort(l.ctx); err != nil {
		t.Fatal(err)
	}
	if err := w.Abort(l.ctx); err != nil {
		t.Fatalf("second abort: %v", err)
	}
	if _, err := w.Commit(l.ctx); err == nil {
		t.Fatal("commit after abort succeeded")
	}
	l.nothingVisible(t, a, 10)
	// A writer never committed nor aborted (its process died): nothing
	// shows either. (Its resources are let go at the end, as a dead
	// process's connection would be.)
	dead := l.stage(t, a, true, listRows("c@example.org", "d@example.org"))
	t.Cleanup(func() { dead.Abort(context.Background()) })
	l.nothingVisible(t, a, 10)
}

func testListUncharged(t *testing.T, l *listBundle) {
	a := l.account(t, 0)
	w := l.stage(t, a, false, listRows("a@example.org", "b@example.org", "a@example.org"))
	info, err := w.Commit(l.ctx)
	if err != nil || info.Charged != 0 || info.Addresses != 2 {
		t.Fatalf("commit: %+v, %v", info, err)
	}
	js, err := l.q.BatchJobs(l.ctx, jobtype.BatchJobsParams{AccountID: a, BatchID: info.BatchID, Limit: 10})
	if err != nil || len(js) != 2 || js[0].Cost != 0 {
		t.Fatalf("jobs %+v, %v", js, err)
	}
}

func testListEmpty(t *testing.T, l *listBundle) {
	a := l.account(t, 10)
	w := l.stage(t, a, true, listRows("junk", "junk"))
	if _, err := w.Commit(l.ctx); !errors.Is(err, jobtype.ErrEmptyBatch) {
		t.Fatalf("commit of no address: %v", err)
	}
	w.Abort(l.ctx)
	l.nothingVisible(t, a, 10)
}

func testBatchNumbers(t *testing.T, l *listBundle) {
	a, b := l.account(t, 10), l.account(t, 10)
	if _, err := l.q.Enqueue(l.ctx, a, []string{"x@example.org"}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.q.Enqueue(l.ctx, b, []string{"x@example.org"}); err != nil {
		t.Fatal(err)
	}
	info, err := l.stage(t, a, true, listRows("a@example.org")).Commit(l.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.q.Enqueue(l.ctx, a, []string{"y@example.org"}); err != nil {
		t.Fatal(err)
	}
	bs, err := l.q.Batches(l.ctx, jobtype.BatchesParams{AccountID: a, Limit: 10})
	if err != nil || len(bs) != 3 {
		t.Fatalf("batches %+v, %v", bs, err)
	}
	for i, want := range []int64{3, 2, 1} {
		if bs[i].Number != want {
			t.Fatalf("batch %d (%s) is number %d; want %d", i, bs[i].ID, bs[i].Number, want)
		}
	}
	if bs[1].ID != info.BatchID || bs[1].Name != "customers.csv" || bs[0].Name != "" {
		t.Fatalf("batches %+v", bs)
	}
	if bb, _ := l.q.Batches(l.ctx, jobtype.BatchesParams{AccountID: b, Limit: 10}); len(bb) != 1 || bb[0].Number != 1 {
		t.Fatalf("the other account's batches: %+v", bb)
	}
}

func testListFree(t *testing.T, l *listBundle) {
	a := l.account(t, 10)
	rows := listRows("a@example.org", "b@example.org", "A@example.org", "c@example.org")
	info, err := l.stageFree(t, a, true, 2, rows).Commit(l.ctx)
	if err != nil || info.Charged != 1 || info.Addresses != 3 {
		t.Fatalf("commit with 2 free: %+v, %v; want 3 addresses, 1 charged", info, err)
	}
	if bal, _ := l.ledger.Balance(l.ctx, a); bal != 9 {
		t.Fatalf("balance %d; want 9", bal)
	}
	js, err := l.q.BatchJobs(l.ctx, jobtype.BatchJobsParams{AccountID: a, BatchID: info.BatchID, Limit: 10})
	if err != nil || len(js) != 3 || js[0].Cost != 0 || js[1].Cost != 0 || js[2].Cost != 1 {
		t.Fatalf("jobs %+v, %v; want costs 0, 0, 1", js, err)
	}
	// A list within the free addresses needs no credits at all.
	poor := l.account(t, 0)
	info, err = l.stageFree(t, poor, true, 5, rows).Commit(l.ctx)
	if err != nil || info.Charged != 0 {
		t.Fatalf("commit within the free addresses: %+v, %v", info, err)
	}
	// Beyond them, the balance must pay for the rest.
	_, err = l.stageFree(t, poor, true, 1, rows).Commit(l.ctx)
	var ie *credits.InsufficientError
	if !errors.As(err, &ie) || ie.Required != 2 {
		t.Fatalf("commit beyond the free addresses: %v; want 2 required", err)
	}
}

// stageKeyed stages rows as a list under an idempotency key.
func (l *listBundle) stageKeyed(t *testing.T, account, key, fingerprint string, ttl time.Duration, rows []jobtype.ListRow) jobtype.ListWriter {
	t.Helper()
	w, err := l.q.BeginList(l.ctx, jobtype.BeginListParams{
		AccountID: account, Name: "keyed.csv", Header: []string{"email", "name"}, Column: 0, Rows: len(rows), Charge: true,
		IdempotencyKey: key, Fingerprint: fingerprint, IdempotencyTTL: ttl,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Append(l.ctx, rows); err != nil {
		t.Fatal(err)
	}
	return w
}

// A list's idempotency key makes it apply once: a repeat with the same
// fingerprint answers the first list and charges nothing, one with
// another is a conflict, concurrent commits make one batch, and an
// expired key starts a new list.
func testListIdempotency(t *testing.T, l *listBundle) {
	a := l.account(t, 100)
	rows := listRows("a@example.org", "b@example.org", "junk", "A@example.org")
	first, err := l.stageKeyed(t, a, "list:k1", "fp1", 0, rows).Commit(l.ctx)
	if err != nil || first.Replayed || first.Charged != 2 || first.Rows != 4 {
		t.Fatalf("first commit: %+v, %v", first, err)
	}
	again, err := l.stageKeyed(t, a, "list:k1", "fp1", 0, rows).Commit(l.ctx)
	if err != nil || !again.Replayed {
		t.Fatalf("repeat: %+v, %v; want the first list replayed", again, err)
	}
	again.Replayed = false
	if again.BatchID != first.BatchID || again.Charged != 2 || again.Addresses != 2 || again.Duplicates != 1 || again.InvalidRows != 1 || again.Name != first.Name {
		t.Fatalf("repeat answered %+v, want %+v", again, first)
	}
	if _, err := l.stageKeyed(t, a, "list:k1", "fp2", 0, rows).Commit(l.ctx); !errors.Is(err, credits.ErrIdempotencyConflict) {
		t.Fatalf("the key with another fingerprint: %v, want ErrIdempotencyConflict", err)
	}
	l.wantLists(t, a, 98, 1)

	// Concurrent commits under one key: one batch, one charge.
	const n = 6
	writers := make([]jobtype.ListWriter, n)
	for i := range writers {
		writers[i] = l.stageKeyed(t, a, "list:k2", "fp3", 0, rows)
	}
	infos := make([]jobtype.ListInfo, n)
	errs := make([]error, n)
	done := make(chan struct{})
	for i, w := range writers {
		go func() {
			defer func() { done <- struct{}{} }()
			infos[i], errs[i] = w.Commit(l.ctx)
		}()
	}
	for range n {
		<-done
	}
	made := 0
	for i := range infos {
		if errs[i] != nil {
			t.Fatalf("concurrent commit %d: %v", i, errs[i])
		}
		if !infos[i].Replayed {
			made++
		}
		if infos[i].BatchID != infos[0].BatchID {
			t.Fatalf("concurrent commits answered batches %s and %s", infos[0].BatchID, infos[i].BatchID)
		}
	}
	if made != 1 {
		t.Fatalf("%d concurrent commits made a list, want 1", made)
	}
	l.wantLists(t, a, 96, 2)
	// Only the committed lists' jobs can be leased: no replayed staging
	// is left behind.
	ls, err := l.driver.Lease(l.ctx, jobsdriver.LeaseParams{Max: 100, Duration: time.Minute})
	if err != nil || len(ls) != 4 {
		t.Fatalf("leased %d jobs, %v; want the 4 of two lists", len(ls), err)
	}

	// An expired key names nothing.
	b := l.account(t, 100)
	if _, err := l.stageKeyed(t, b, "list:k3", "fp4", time.Millisecond, rows).Commit(l.ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond) // past the key's TTL
	later, err := l.stageKeyed(t, b, "list:k3", "fp4", time.Millisecond, rows).Commit(l.ctx)
	if err != nil || later.Replayed {
		t.Fatalf("after the key expired: %+v, %v; want a new list", later, err)
	}
	l.wantLists(t, b, 96, 2)
}

// wantLists fails unless the account has balance bal and n batches.
func (l *listBundle) wantLists(t *testing.T, account string, bal int64, n int) {
	t.Helper()
	if got, err := l.ledger.Balance(l.ctx, account); err != nil || got != bal {
		t.Fatalf("balance %d, %v; want %d", got, err, bal)
	}
	bs, err := l.q.Batches(l.ctx, jobtype.BatchesParams{AccountID: account, Limit: 10})
	if err != nil || len(bs) != n {
		t.Fatalf("%d batches, %v; want %d", len(bs), err, n)
	}
}
