package memstore_test

import (
	"testing"

	"github.com/validmail/validmail/jobs/jobstest"
	"github.com/validmail/validmail/store"
	"github.com/validmail/validmail/store/memstore"
)

func BenchmarkQueue(b *testing.B) {
	jobstest.Bench(b, func(testing.TB) *store.Backend { return memstore.NewBackend() })
}
