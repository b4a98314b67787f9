package pgstore_test

import (
	"testing"

	"github.com/validmail/validmail/jobs/jobstest"
	"github.com/validmail/validmail/store"
)

func BenchmarkQueue(b *testing.B) {
	jobstest.Bench(b, func(tb testing.TB) *store.Backend { return newStore(tb).Backend() })
}
