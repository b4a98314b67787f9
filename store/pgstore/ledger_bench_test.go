package pgstore_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/store/pgstore"
)

// BenchmarkCharge measures a charge of one credit, as each validation
// makes, with the per-day totals the entries' trigger keeps and, for
// comparison, without them (the trigger dropped).
func BenchmarkCharge(b *testing.B) {
	for _, totals := range []bool{true, false} {
		b.Run(fmt.Sprintf("totals=%v", totals), func(b *testing.B) {
			ctx := context.Background()
			pool := testPool(b)
			schema := testSchema(b, pool)
			s, err := pgstore.New(ctx, pool, &pgstore.Config{Schema: schema})
			if err != nil {
				b.Fatal(err)
			}
			if !totals {
				if _, err := pool.Exec(ctx, `DROP TRIGGER credit_totals_add ON "`+schema+`".credit_entries`); err != nil {
					b.Fatal(err)
				}
			}
			l := credits.New(s, nil)
			var next atomic.Int64
			b.RunParallel(func(pb *testing.PB) {
				acct := fmt.Sprint("acct-", next.Add(1))
				if _, err := l.Grant(ctx, acct, 1<<40, ""); err != nil {
					b.Error(err)
					return
				}
				for pb.Next() {
					if _, err := l.Charge(ctx, acct, 1, ""); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// alone hides a store's groups: every change is applied by itself.
type alone struct{ credits.Store }

// BenchmarkChargeOneAccount measures 32 concurrent charges of one account,
// as a busy client with one key makes, with the account's charges grouped
// into shared commits and, for comparison, one by one on its balance row.
func BenchmarkChargeOneAccount(b *testing.B) {
	for _, grouped := range []bool{true, false} {
		b.Run(fmt.Sprintf("grouped=%v", grouped), func(b *testing.B) {
			ctx := context.Background()
			pool := testPool(b)
			s, err := pgstore.New(ctx, pool, &pgstore.Config{Schema: testSchema(b, pool)})
			if err != nil {
				b.Fatal(err)
			}
			var store credits.Store = s
			if !grouped {
				store = alone{s}
			}
			l := credits.New(store, nil)
			if _, err := l.Grant(ctx, "acct", 1<<40, ""); err != nil {
				b.Fatal(err)
			}
			b.SetParallelism(16) // 32 goroutines on 2 CPUs
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := l.Charge(ctx, "acct", 1, ""); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "charges/s")
			if bal, err := l.Balance(ctx, "acct"); err != nil || bal != 1<<40-int64(b.N) {
				b.Errorf("balance %d (%v), want %d", bal, err, 1<<40-int64(b.N))
			}
		})
	}
}
