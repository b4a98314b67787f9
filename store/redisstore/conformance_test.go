package redisstore_test

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
	creditstest.Run(t, func(t *testing.T) credits.Store { s, _, _ := setup(t, nil); return s })
}

func TestJobs(t *testing.T) {
	jobstest.Run(t, func(t *testing.T) jobstest.Backend {
		s, _, _ := setup(t, nil)
		return jobstest.Backend{Driver: s, Credits: s, Events: func(ctx context.Context, a string) ([]jobs.Event, error) {
			return jobevents.List(ctx, s.Webhooks(), a)
		}}
	})
}

func TestWebhooks(t *testing.T) {
	webhooktest.Run(t, func(t *testing.T) (webhook.Outbox, webhook.Endpoints) {
		s, _, _ := setup(t, nil)
		w := s.Webhooks()
		return w, w
	})
}

func TestAccounts(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Backend {
		s, _, _ := setup(t, nil)
		return storetest.Backend{Accounts: s, Credits: s, Dump: s.Dump}
	})
}
