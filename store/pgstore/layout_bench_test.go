package pgstore_test

import (
	"context"
	"testing"

	"github.com/validmail/validmail/jobs/jobstest"
	"github.com/validmail/validmail/store/pgstore"
	"github.com/validmail/validmail/store/storetest"
)

// BenchmarkQueueLayout runs the queue benchmarks over the same code on
// both table layouts: jobs and batches partitioned by day (what Migrate
// makes) and as plain tables. Compare with
//
//	go test -run '^$' -bench 'QueueLayout/.*/Drain$' -benchtime 20000x -count 6 ./store/pgstore | benchstat -col /layout -
func BenchmarkQueueLayout(b *testing.B) {
	for _, layout := range []string{"unpartitioned", "partitioned"} {
		b.Run("layout="+layout, func(b *testing.B) {
			jobstest.Bench(b, func(tb testing.TB) jobstest.Backend {
				if layout == "partitioned" {
					return storetest.Jobs(tb, newStore(tb).Backend())
				}
				pool := testPool(tb)
				s, err := pgstore.OpenUnpartitioned(context.Background(), pool, testSchema(tb, pool))
				if err != nil {
					tb.Fatal(err)
				}
				return storetest.Jobs(tb, s.Backend())
			})
		})
	}
}
