package service

import (
	"context"

	"github.com/validmail/validmail/plans"
	"github.com/validmail/validmail/store"
)

// planConcurrency returns the pool's bound of an account's jobs at once
// (jobs.PoolConfig.AccountConcurrency): its plan's concurrent jobs, 0
// (none) for a plan without one or an account that cannot be read. Nil
// when no plan of the catalog bounds its jobs, so that the pool asks
// nothing.
func planConcurrency(catalog *plans.Catalog, accounts store.Accounts) func(context.Context, string) int {
	if catalog == nil {
		return nil
	}
	bounded := false
	for _, name := range catalog.Names() {
		if catalog.For(name).ConcurrentJobs > 0 {
			bounded = true
		}
	}
	if !bounded {
		return nil
	}
	return func(ctx context.Context, account string) int {
		a, err := accounts.GetAccount(ctx, account)
		if err != nil {
			return 0
		}
		return catalog.For(a.Plan).ConcurrentJobs
	}
}
