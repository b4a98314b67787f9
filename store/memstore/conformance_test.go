package memstore_test

import (
	"testing"

	"github.com/validmail/validmail/store/backend"
	"github.com/validmail/validmail/store/memstore"
	"github.com/validmail/validmail/store/storetest"
)

func TestBackend(t *testing.T) {
	storetest.RunBackend(t, storetest.Harness{
		New: func(testing.TB) *backend.Backend { return memstore.NewBackend() },
	})
}
