package service

import (
	"context"
	"log/slog"

	"github.com/validmail/validmail/httpapi/internal/buckets"
	"github.com/validmail/validmail/plans"
	"github.com/validmail/validmail/store"
	"github.com/validmail/validmail/store/ratelimit"
)

// newProbeBudget returns the validator's probe budget: one token of
// limit's bucket per probe, per account, in l (in memory when nil). A
// limiter that cannot decide refuses the probe: the address keeps its DNS
// verdict, and no account probes beyond its budget while the store is
// away.
//
// byPlan, when set, gives an account's own limit (its plan's), or false
// to keep limit.
func newProbeBudget(l ratelimit.Limiter, limit ratelimit.Limit, logger *slog.Logger, byPlan func(context.Context, string) (ratelimit.Limit, bool)) (func(context.Context, string) bool, error) {
	if limit == (ratelimit.Limit{}) {
		limit = ratelimit.Limit{PerSecond: DefaultProbesPerSecond, Burst: DefaultProbeBurst}
	}
	if err := limit.Check(); err != nil {
		return nil, err
	}
	if limit.Unlimited() && byPlan == nil {
		return nil, nil
	}
	if l == nil {
		l = ratelimit.NewMemory(nil)
	}
	return func(ctx context.Context, account string) bool {
		lim := limit
		if byPlan != nil {
			if own, ok := byPlan(ctx, account); ok {
				lim = own
			}
		}
		if lim.Unlimited() {
			return true
		}
		d, err := l.Allow(ctx, buckets.Probe(account), lim)
		if err != nil {
			logger.WarnContext(ctx, "service: probe budget undecided, address not probed", "account_id", account, "err", err)
			return false
		}
		return d.Allowed
	}, nil
}

// planProbes returns the probe limit of an account's plan, read from
// accounts (a probe is an SMTP conversation: one read beside it is
// nothing), or nil without a catalog. A plan without a budget, or an
// account that cannot be read, keeps the service's limit.
func planProbes(catalog *plans.Catalog, accounts store.Accounts) func(context.Context, string) (ratelimit.Limit, bool) {
	if catalog == nil {
		return nil
	}
	return func(ctx context.Context, account string) (ratelimit.Limit, bool) {
		a, err := accounts.GetAccount(ctx, account)
		if err != nil {
			return ratelimit.Limit{}, false
		}
		p := catalog.For(a.Plan)
		if p.ProbeBudget == 0 && p.ProbeRatePerSecond == 0 {
			return ratelimit.Limit{}, false
		}
		l := ratelimit.Limit{PerSecond: p.ProbeRatePerSecond, Burst: p.ProbeBudget}
		if l.PerSecond == 0 {
			l.PerSecond = DefaultProbesPerSecond
		}
		if l.Burst == 0 {
			l.Burst = max(1, int(l.PerSecond))
		}
		return l, true
	}
}
