package pgstore_test

import (
	"testing"

	"github.com/validmail/validmail/jobs/jobstest"
	"github.com/validmail/validmail/store"
)

func TestLists(t *testing.T) {
	testPool(t)
	jobstest.RunLists(t, func(tb testing.TB) *store.Backend { return newStore(tb).Backend() })
}
