package memstore_test

import (
	"testing"

	"github.com/validmail/validmail/jobs/jobstest"
	"github.com/validmail/validmail/store"
	"github.com/validmail/validmail/store/memstore"
)

func TestLists(t *testing.T) {
	jobstest.RunLists(t, func(testing.TB) *store.Backend { return memstore.NewBackend() })
}
