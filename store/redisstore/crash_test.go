package redisstore_test

import (
	"context"
	"testing"

	"github.com/validmail/validmail/jobs"
	"github.com/validmail/validmail/jobs/jobstest"
	"github.com/validmail/validmail/store/redisstore"
	"github.com/validmail/validmail/webhook/jobevents"
)

// newPrefix returns a fresh key prefix whose keys are deleted when tb
// ends.
func newPrefix(tb testing.TB) string {
	_, _, prefix := setup(tb, nil)
	return prefix
}

// openPrefix returns a Store over the keys with prefix.
func openPrefix(tb testing.TB, prefix string) *redisstore.Store {
	tb.Helper()
	s, err := redisstore.New(client(tb), &redisstore.Config{Prefix: prefix})
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// crashBackend is a key prefix shared by a test process and its workers.
var crashBackend = jobstest.CrashBackend{
	ChildTest:    "TestCrashChild",
	NewNamespace: newPrefix,
	Open: func(tb testing.TB, prefix string) jobstest.Backend {
		s := openPrefix(tb, prefix)
		events := func(ctx context.Context, account string) ([]jobs.Event, error) {
			return jobevents.List(ctx, s.Webhooks(), account)
		}
		return jobstest.Backend{Driver: s, Credits: s, Events: events}
	},
}

func TestCrash(t *testing.T)      { jobstest.RunCrash(t, crashBackend) }
func TestCrashChild(t *testing.T) { jobstest.CrashChild(t, crashBackend) }
