package pgstore_test

import (
	"testing"

	"github.com/validmail/validmail/jobs/jobstest"
	"github.com/validmail/validmail/store/storetest"
)

func BenchmarkQueue(b *testing.B) {
	jobstest.Bench(b, func(tb testing.TB) jobstest.Backend { return storetest.Jobs(tb, newStore(tb).Backend()) })
}
