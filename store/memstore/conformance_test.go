package memstore_test

import (
	"context"
	"testing"

	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/credits/creditstest"
	"github.com/validmail/validmail/jobs"
	"github.com/validmail/validmail/jobs/jobstest"
	"github.com/validmail/validmail/store/memstore"
	"github.com/validmail/validmail/store/storetest"
	"github.com/validmail/validmail/webhook"
	"github.com/validmail/validmail/webhook/jobevents"
	"github.com/validmail/validmail/webhook/webhooktest"
)

func TestCredits(t *testing.T) {
	creditstest.Run(t, func(t *testing.T) credits.Store { return memstore.New() })
}

func TestJobs(t *testing.T) {
	jobstest.Run(t, func(t *testing.T) jobstest.Backend {
		s := memstore.New()
		events := func(ctx context.Context, account string) ([]jobs.Event, error) {
			return jobevents.List(ctx, s.Webhooks(), account)
		}
		return jobstest.Backend{Driver: s, Credits: s, Events: events}
	})
}

func TestAccounts(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Backend {
		s := memstore.New()
		return storetest.Backend{Accounts: s, Credits: s, Dump: s.Dump}
	})
}

func TestWebhooks(t *testing.T) {
	webhooktest.Run(t, func(t *testing.T) (webhook.Outbox, webhook.Endpoints) {
		w := memstore.New().Webhooks()
		return w, w
	})
}
