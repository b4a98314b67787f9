package redisstore_test

import (
	"testing"

	"github.com/validmail/validmail/store/backend"
	"github.com/validmail/validmail/store/crashtest"
	"github.com/validmail/validmail/store/redisstore"
)

// durable is a key prefix shared by a test process and the worker and
// dispatcher processes of the crash tests.
var durable = crashtest.Durable[*backend.Backend]{
	NewNamespace: newPrefix,
	Open:         func(tb testing.TB, prefix string) *backend.Backend { return openPrefix(tb, prefix).Backend() },
}

// newPrefix returns a fresh key prefix whose keys are deleted when tb
// ends.
func newPrefix(tb testing.TB) string {
	_, _, prefix := setup(tb, nil)
	return prefix
}

// openPrefix returns a Store over the keys with prefix.
func openPrefix(tb testing.TB, prefix string) *redisstore.Store {
	tb.Helper()
	s, err := redisstore.New(client(tb), &redisstore.Config{Prefix: prefix, Init: true})
	if err != nil {
		tb.Fatal(err)
	}
	return s
}
