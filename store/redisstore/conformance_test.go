package redisstore_test

import (
	"testing"

	"github.com/validmail/validmail/store/backend"
	"github.com/validmail/validmail/store/storetest"
)

func TestBackend(t *testing.T) {
	client(t)
	storetest.RunBackend(t, storetest.Harness{New: newBackend, Durable: &durable})
}

// newBackend returns a backend under a fresh prefix.
func newBackend(tb testing.TB) *backend.Backend {
	s, _, _ := setup(tb, nil)
	return s.Backend()
}
