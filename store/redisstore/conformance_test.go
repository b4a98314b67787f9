package redisstore_test

import (
	"testing"

	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/credits/creditstest"
	"github.com/validmail/validmail/jobs/jobstest"
	"github.com/validmail/validmail/store/storetest"
)

func TestCredits(t *testing.T) {
	creditstest.Run(t, func(t *testing.T) credits.Store { s, _, _ := setup(t, nil); return s })
}

func TestJobs(t *testing.T) {
	jobstest.Run(t, func(t *testing.T) jobstest.Backend {
		s, _, _ := setup(t, nil)
		return jobstest.Backend{Driver: s, Credits: s, Events: s.Outbox}
	})
}

func TestAccounts(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Backend {
		s, _, _ := setup(t, nil)
		return storetest.Backend{Accounts: s, Credits: s, Dump: s.Dump}
	})
}
