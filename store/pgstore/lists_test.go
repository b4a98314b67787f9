package pgstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/jobs/jobsdriver"
	"github.com/validmail/validmail/jobs/jobtype"
	"github.com/validmail/validmail/store/pgstore"
)

// TestListConnectionLost kills the list's connection mid-upload, as a
// crash of the uploading process would: the list's transaction rolls
// back, leaving no job, row, batch or charge.
func TestListConnectionLost(t *testing.T) {
	ctx := t.Context()
	pool := testPool(t)
	schema := testSchema(t, pool)
	s, err := pgstore.New(ctx, pool, &pgstore.Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	ledger := credits.New(s, nil)
	if _, err := ledger.Apply(ctx, creditsGrant("acct", 10_000)); err != nil {
		t.Fatal(err)
	}
	w, err := s.BeginList(ctx, jobtype.BeginListParams{AccountID: "acct", Header: []string{"email"}, Rows: 3000, Charge: true})
	if err != nil {
		t.Fatal(err)
	}
	rows := make([]jobtype.ListRow, 3000)
	for i := range rows {
		e := fmt.Sprintf("u%d@example.org", i)
		rows[i] = jobtype.ListRow{N: i, Record: []string{e}, Email: e, Key: e}
	}
	if err := w.Append(ctx, rows); err != nil {
		t.Fatal(err)
	}
	// The one connection holding this schema's job sequence in an open
	// transaction is the list's.
	var killed int
	err = pool.QueryRow(ctx, `
		SELECT count(pg_terminate_backend(a.pid)) FROM pg_stat_activity a
		JOIN pg_locks l ON l.pid = a.pid
		WHERE l.relation = to_regclass(quote_ident($1) || '.jobs_id_seq') AND a.pid <> pg_backend_pid()`, schema).Scan(&killed)
	if err != nil || killed != 1 {
		t.Fatalf("killed %d connections, %v; want the list's", killed, err)
	}
	if _, err := w.Commit(ctx); err == nil {
		t.Fatal("commit on a dead connection succeeded")
	}
	w.Abort(context.Background())
	var jobsLeft, rowsLeft, batches int
	err = pool.QueryRow(ctx, fmt.Sprintf(`SELECT (SELECT count(*) FROM %[1]q.jobs), (SELECT count(*) FROM %[1]q.list_rows), (SELECT count(*) FROM %[1]q.batches)`, schema)).
		Scan(&jobsLeft, &rowsLeft, &batches)
	if err != nil {
		t.Fatal(err)
	}
	if jobsLeft+rowsLeft+batches != 0 {
		t.Fatalf("after the lost connection: %d jobs, %d rows, %d batches", jobsLeft, rowsLeft, batches)
	}
	if bal, _ := ledger.Balance(ctx, "acct"); bal != 10_000 {
		t.Fatalf("balance %d; want 10000", bal)
	}
	if ls, err := s.Lease(ctx, jobsdriver.LeaseParams{Max: 10, Duration: time.Minute}); err != nil || len(ls) != 0 {
		t.Fatalf("leased %d, %v", len(ls), err)
	}
}
