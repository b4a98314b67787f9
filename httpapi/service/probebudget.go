package service

import (
	"context"
	"log/slog"

	"github.com/validmail/validmail/httpapi/internal/buckets"
	"github.com/validmail/validmail/httpapi/ratelimit"
)

// newProbeBudget returns the validator's probe budget: one token of
// limit's bucket per probe, per account, in l (in memory when nil). A
// limiter that cannot decide refuses the probe: the address keeps its DNS
// verdict, and no account probes beyond its budget while the store is
// away.
func newProbeBudget(l ratelimit.Limiter, limit ratelimit.Limit, logger *slog.Logger) (func(context.Context, string) bool, error) {
	if limit == (ratelimit.Limit{}) {
		limit = ratelimit.Limit{PerSecond: DefaultProbesPerSecond, Burst: DefaultProbeBurst}
	}
	if err := limit.Check(); err != nil {
		return nil, err
	}
	if limit.Unlimited() {
		return nil, nil
	}
	if l == nil {
		l = ratelimit.NewMemory(nil)
	}
	return func(ctx context.Context, account string) bool {
		d, err := l.Allow(ctx, buckets.Probe(account), limit)
		if err != nil {
			logger.WarnContext(ctx, "service: probe budget undecided, address not probed", "account_id", account, "err", err)
			return false
		}
		return d.Allowed
	}, nil
}
