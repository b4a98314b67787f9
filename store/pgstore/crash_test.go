package pgstore_test

import (
	"context"
	"testing"

	"github.com/validmail/validmail/jobs"
	"github.com/validmail/validmail/jobs/jobstest"
	"github.com/validmail/validmail/store/pgstore"
	"github.com/validmail/validmail/webhook/jobevents"
)

// openSchema returns a Store over an existing schema, migrating it.
func openSchema(tb testing.TB, schema string) *pgstore.Store {
	tb.Helper()
	s, err := pgstore.New(context.Background(), testPool(tb), &pgstore.Config{Schema: schema})
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// crashBackend is a schema shared by a test process and its workers.
var crashBackend = jobstest.CrashBackend{
	ChildTest:    "TestCrashChild",
	NewNamespace: func(tb testing.TB) string { return testSchema(tb, testPool(tb)) },
	Open: func(tb testing.TB, schema string) jobstest.Backend {
		s := openSchema(tb, schema)
		events := func(ctx context.Context, account string) ([]jobs.Event, error) {
			return jobevents.List(ctx, s.Webhooks(), account)
		}
		return jobstest.Backend{Driver: s, Credits: s, Events: events}
	},
}

func TestCrash(t *testing.T)      { jobstest.RunCrash(t, crashBackend) }
func TestCrashChild(t *testing.T) { jobstest.CrashChild(t, crashBackend) }
