package storetest

import (
	"context"
	"os"
	"testing"

	"github.com/validmail/validmail/billing/billingtest"
	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/credits/creditstest"
	"github.com/validmail/validmail/jobs/jobstest"
	"github.com/validmail/validmail/store/backend"
	"github.com/validmail/validmail/store/crashtest"
	"github.com/validmail/validmail/store/ratelimit"
	"github.com/validmail/validmail/store/ratelimit/ratelimittest"
	"github.com/validmail/validmail/webhook"
	"github.com/validmail/validmail/webhook/jobevents"
	"github.com/validmail/validmail/webhook/webhooktest"
)

// Harness is how [RunBackend] makes backends.
type Harness struct {
	// New returns a fresh, empty backend that no other call shares (a new
	// store, schema or key prefix), cleaned up when tb ends. It is called
	// once per subtest, from parallel subtests.
	New func(tb testing.TB) *backend.Backend
	// Durable, for a backend whose data outlives the process, runs the
	// crash tests. Its ChildTest may be left empty: RunBackend fills in
	// the name of the top-level test that calls it, which must then call
	// RunBackend alone, so that the child processes it starts run the
	// crash suites' worker side. Nil skips the crash tests.
	Durable *crashtest.Durable[*backend.Backend]
}

// RunBackend runs every conformance suite against backends from h:
// Credits, Jobs, Webhooks, Billing, Accounts and RateLimits (ratelimittest, on the
// backend's Limiter), and Crash when h.Durable is set.
// Inside a child process of a crash test it runs that child's work and
// nothing else.
func RunBackend(t *testing.T, h Harness) {
	if h.New == nil {
		t.Fatal("storetest: Harness.New is nil")
	}
	var jobsCrash crashtest.Durable[jobstest.Backend]
	var webhooksCrash crashtest.Durable[webhooktest.Backend]
	if h.Durable != nil {
		durable := *h.Durable
		if durable.ChildTest == "" {
			durable.ChildTest = t.Name()
		}
		jobsCrash = crashtest.Map(durable, Jobs)
		webhooksCrash = crashtest.Map(durable, Webhooks)
		switch {
		case os.Getenv(jobstest.EnvCrashNamespace) != "":
			jobstest.CrashChild(t, jobsCrash)
			return
		case os.Getenv(webhooktest.EnvCrashNamespace) != "":
			webhooktest.CrashChild(t, webhooksCrash)
			return
		}
	}
	t.Run("Credits", func(t *testing.T) {
		creditstest.Run(t, func(tb testing.TB) credits.Store { return Credits(tb, h.New(tb)) })
	})
	t.Run("Jobs", func(t *testing.T) {
		jobstest.Run(t, func(tb testing.TB) jobstest.Backend { return Jobs(tb, h.New(tb)) })
	})
	t.Run("Lists", func(t *testing.T) {
		jobstest.RunLists(t, func(tb testing.TB) jobstest.Backend { return Jobs(tb, h.New(tb)) })
	})
	t.Run("ListDrafts", func(t *testing.T) {
		jobstest.RunListDrafts(t, func(tb testing.TB) jobstest.Backend { return Jobs(tb, h.New(tb)) })
	})
	t.Run("Webhooks", func(t *testing.T) {
		webhooktest.Run(t, func(tb testing.TB) webhooktest.Backend { return Webhooks(tb, h.New(tb)) })
	})
	t.Run("Billing", func(t *testing.T) { runBilling(t, h) })
	t.Run("Accounts", func(t *testing.T) { Run(t, h.New) })
	t.Run("RateLimits", func(t *testing.T) { runLimiter(t, h) })
	if h.Durable != nil {
		t.Run("Crash", func(t *testing.T) {
			t.Run("Jobs", func(t *testing.T) { jobstest.RunCrash(t, jobsCrash) })
			t.Run("JobsCompleting", func(t *testing.T) { jobstest.RunCrashCompleting(t, jobsCrash) })
			t.Run("Webhooks", func(t *testing.T) { webhooktest.RunCrash(t, webhooksCrash) })
		})
	}
}

// runBilling runs billingtest on the backend's Billing, with two
// instances over one namespace when the backend is durable, else with
// the one backend twice. A backend without Billing skips it.
func runBilling(t *testing.T, h Harness) {
	if h.New(t).Billing == nil {
		t.Skip("the backend records no checkouts")
	}
	billingtest.Run(t, billingtest.Harness{New: func(t *testing.T) (billingtest.Instance, billingtest.Instance) {
		instance := func(b *backend.Backend) billingtest.Instance {
			return billingtest.Instance{Billing: b.Billing, Credits: b.Credits}
		}
		if d := h.Durable; d != nil {
			ns := d.NewNamespace(t)
			return instance(d.Open(t, ns)), instance(d.Open(t, ns))
		}
		b := h.New(t)
		return instance(b), instance(b)
	}})
}

// runLimiter runs ratelimittest on the backend's Limiter, with two
// instances over one namespace when the backend is durable (two
// processes of a deployment), else with the one limiter twice. A backend
// without a Limiter skips it.
func runLimiter(t *testing.T, h Harness) {
	if h.New(t).Limiter == nil {
		t.Skip("the backend has no shared rate limiter")
	}
	ratelimittest.Run(t, ratelimittest.Harness{New: func(t *testing.T) (ratelimit.Limiter, ratelimit.Limiter) {
		if d := h.Durable; d != nil {
			ns := d.NewNamespace(t)
			return d.Open(t, ns).Limiter, d.Open(t, ns).Limiter
		}
		l := h.New(t).Limiter
		return l, l
	}})
}

// Credits returns what creditstest checks of b: its Credits. It fails tb
// when b has none.
func Credits(tb testing.TB, b *backend.Backend) credits.Store {
	tb.Helper()
	if b == nil || b.Credits == nil {
		tb.Fatal("storetest: the backend needs Credits")
	}
	return b.Credits
}

// Jobs returns what jobstest checks of b: its Jobs driver, the Credits it
// charges, and the job and batch events its completions wrote to its
// Outbox. It fails tb when b lacks one of them.
func Jobs(tb testing.TB, b *backend.Backend) jobstest.Backend {
	tb.Helper()
	if b == nil || b.Jobs == nil || b.Credits == nil || b.Outbox == nil {
		tb.Fatal("storetest: the backend needs Jobs, Credits and Outbox")
	}
	return jobstest.Backend{
		Driver:  b.Jobs,
		Credits: b.Credits,
		Events: func(ctx context.Context, account string) ([]webhook.Event, error) {
			return jobevents.List(ctx, b.Outbox, account)
		},
	}
}

// Webhooks returns what webhooktest checks of b: its Outbox and
// Endpoints. It fails tb when b lacks one of them.
func Webhooks(tb testing.TB, b *backend.Backend) webhooktest.Backend {
	tb.Helper()
	if b == nil || b.Outbox == nil || b.Endpoints == nil {
		tb.Fatal("storetest: the backend needs Outbox and Endpoints")
	}
	return webhooktest.Backend{Outbox: b.Outbox, Endpoints: b.Endpoints}
}
