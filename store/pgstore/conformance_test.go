package pgstore_test

import (
	"context"
	"testing"

	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/credits/creditstest"
	"github.com/validmail/validmail/jobs"
	"github.com/validmail/validmail/jobs/jobstest"
	"github.com/validmail/validmail/store/storetest"
	"github.com/validmail/validmail/webhook"
	"github.com/validmail/validmail/webhook/jobevents"
	"github.com/validmail/validmail/webhook/webhooktest"
)

func TestCredits(t *testing.T) {
	testPool(t)
	creditstest.Run(t, func(t *testing.T) credits.Store { return newStore(t) })
}

func TestJobs(t *testing.T) {
	testPool(t)
	jobstest.Run(t, func(t *testing.T) jobstest.Backend {
		s := newStore(t)
		events := func(ctx context.Context, account string) ([]jobs.Event, error) {
			return jobevents.List(ctx, s.Webhooks(), account)
		}
		return jobstest.Backend{Driver: s, Credits: s, Events: events}
	})
}

func TestAccounts(t *testing.T) {
	testPool(t)
	storetest.Run(t, func(t *testing.T) storetest.Backend {
		s := newStore(t)
		return storetest.Backend{Accounts: s, Credits: s, Dump: s.Dump}
	})
}

func TestWebhooks(t *testing.T) {
	testPool(t)
	webhooktest.Run(t, func(t *testing.T) (webhook.Outbox, webhook.Endpoints) {
		w := newStore(t).Webhooks()
		return w, w
	})
}
