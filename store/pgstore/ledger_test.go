package pgstore_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/store/pgstore"
)

// The totals migration counts the entries written before it: here a
// schema is made at the version before the totals, written to, and
// migrated to the latest.
func TestTotalsMigrationBackfills(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testPool(t)
	schema := testSchema(t, pool)
	s, err := pgstore.OpenAtVersion(ctx, pool, schema, pgstore.TotalsVersion-1)
	if err != nil {
		t.Fatal(err)
	}
	q := func(sql string) {
		t.Helper()
		if _, err := pool.Exec(ctx, strings.ReplaceAll(sql, "{schema}", `"`+schema+`"`)); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}

	l := credits.New(s, nil)
	for _, acct := range []string{"a", "b"} {
		if _, err := l.Grant(ctx, acct, 100, ""); err != nil {
			t.Fatal(err)
		}
		for i := range 10 {
			if _, err := l.Charge(ctx, acct, 3, fmt.Sprint("c", i)); err != nil {
				t.Fatal(err)
			}
			if i%2 == 0 {
				if _, err := l.Refund(ctx, acct, 1, fmt.Sprint("r", i)); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	// An entry of an earlier day.
	q(`ALTER TABLE {schema}.credit_entries DISABLE TRIGGER credit_entries_append_only`)
	q(`UPDATE {schema}.credit_entries SET created_at = created_at - interval '40 days' WHERE reason = 'grant'`)
	q(`ALTER TABLE {schema}.credit_entries ENABLE TRIGGER credit_entries_append_only`)

	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Charge(ctx, "a", 1, "after"); err != nil {
		t.Fatal(err)
	}
	from, to := time.Now().AddDate(0, 0, -60), time.Now().AddDate(0, 0, 2)
	for _, acct := range []string{"a", "b"} {
		got, err := l.Totals(ctx, credits.TotalsParams{AccountID: acct, From: from, To: to})
		if err != nil {
			t.Fatal(err)
		}
		hist, err := l.History(ctx, acct)
		if err != nil {
			t.Fatal(err)
		}
		want := credits.TotalsOf(hist, credits.TotalsParams{From: credits.Day(from), To: credits.Day(to)})
		if fmt.Sprint(got) != fmt.Sprint(want) || len(got) < 3 {
			t.Fatalf("account %s: totals %v, want %v", acct, got, want)
		}
	}
}

// A page is an index range scan of the entries, whatever their number.
func TestHistoryPagePlan(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testPool(t)
	schema := testSchema(t, pool)
	if _, err := pgstore.New(ctx, pool, &pgstore.Config{Schema: schema}); err != nil {
		t.Fatal(err)
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SET LOCAL enable_seqscan = off`); err != nil {
		t.Fatal(err)
	}
	var plan strings.Builder
	rows, err := tx.Query(ctx, `EXPLAIN SELECT id, delta, reason, reference, coalesce(idempotency_key, ''), created_at
		FROM "`+schema+`".credit_entries WHERE account = 'a' AND id < 100 ORDER BY id DESC LIMIT 51`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		plan.WriteString(line + "\n")
	}
	if !strings.Contains(plan.String(), "Index Scan Backward using credit_entries_account_idx") || strings.Contains(plan.String(), "Sort") {
		t.Fatalf("plan:\n%s", plan.String())
	}
}
