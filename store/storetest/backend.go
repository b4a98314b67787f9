package storetest

import (
	"os"
	"testing"

	"github.com/validmail/validmail/credits/creditstest"
	"github.com/validmail/validmail/jobs/jobstest"
	"github.com/validmail/validmail/store"
	"github.com/validmail/validmail/store/storetest/crashtest"
	"github.com/validmail/validmail/webhook/webhooktest"
)

// Harness is how [RunBackend] makes backends.
type Harness struct {
	// New returns a fresh, empty backend that no other call shares (a new
	// store, schema or key prefix), cleaned up when tb ends. It is called
	// once per subtest, from parallel subtests.
	New func(tb testing.TB) *store.Backend
	// Durable, for a backend whose data outlives the process, runs the
	// crash tests. Its ChildTest may be left empty: RunBackend fills in
	// the name of the top-level test that calls it, which must then call
	// RunBackend alone, so that the child processes it starts run the
	// crash suites' worker side. Nil skips the crash tests.
	Durable *crashtest.Durable
}

// RunBackend runs every conformance suite against backends from h:
// Credits, Jobs, Webhooks and Accounts, and Crash when h.Durable is set.
// Inside a child process of a crash test it runs that child's work and
// nothing else.
func RunBackend(t *testing.T, h Harness) {
	if h.New == nil {
		t.Fatal("storetest: Harness.New is nil")
	}
	var durable crashtest.Durable
	if h.Durable != nil {
		durable = *h.Durable
		if durable.ChildTest == "" {
			durable.ChildTest = t.Name()
		}
		switch {
		case os.Getenv(jobstest.EnvCrashNamespace) != "":
			jobstest.CrashChild(t, durable)
			return
		case os.Getenv(webhooktest.EnvCrashNamespace) != "":
			webhooktest.CrashChild(t, durable)
			return
		}
	}
	t.Run("Credits", func(t *testing.T) { creditstest.Run(t, h.New) })
	t.Run("Jobs", func(t *testing.T) { jobstest.Run(t, h.New) })
	t.Run("Webhooks", func(t *testing.T) { webhooktest.Run(t, h.New) })
	t.Run("Accounts", func(t *testing.T) { Run(t, h.New) })
	if h.Durable != nil {
		t.Run("Crash", func(t *testing.T) {
			t.Run("Jobs", func(t *testing.T) { jobstest.RunCrash(t, durable) })
			t.Run("JobsCompleting", func(t *testing.T) { jobstest.RunCrashCompleting(t, durable) })
			t.Run("Webhooks", func(t *testing.T) { webhooktest.RunCrash(t, durable) })
		})
	}
}
