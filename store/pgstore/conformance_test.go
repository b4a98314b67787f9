package pgstore_test

import (
	"testing"

	"github.com/validmail/validmail/store/backend"
	"github.com/validmail/validmail/store/crashtest"
	"github.com/validmail/validmail/store/storetest"
)

func TestBackend(t *testing.T) {
	testPool(t)
	storetest.RunBackend(t, storetest.Harness{
		New: func(tb testing.TB) *backend.Backend { return newStore(tb).Backend() },
		Durable: &crashtest.Durable[*backend.Backend]{
			NewNamespace: func(tb testing.TB) string { return testSchema(tb, testPool(tb)) },
			Open:         func(tb testing.TB, schema string) *backend.Backend { return openSchema(tb, schema).Backend() },
		},
	})
}
