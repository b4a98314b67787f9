package dashboard

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/validmail/validmail/httpapi/ratelimit"
)

// limiters are the dashboard's view of [Config.Limiter]: its buckets, and
// its quotas (a process's own when the limiter keeps none).
type limiters struct {
	buckets ratelimit.Limiter
	quotas  ratelimit.Counter
}

func newLimiters(l ratelimit.Limiter, now func() time.Time) limiters {
	mem := ratelimit.NewMemory(now)
	if l == nil {
		return limiters{buckets: mem, quotas: mem}
	}
	c, ok := l.(ratelimit.Counter)
	if !ok {
		c = mem
	}
	return limiters{buckets: l, quotas: c}
}

// clientKey is the key the request's client address counts under.
func (d *Dashboard) clientKey(r *http.Request) string {
	return ratelimit.ClientKey(d.cfg.ClientIP(r))
}

// allow takes a token for key from a bucket shaped by limit: it reports
// whether the request may go on and, when not, how long until it may. A
// limiter that fails lets the request through, logged: an outage of the
// limiter does not close the console.
func (d *Dashboard) allow(r *http.Request, key string, limit ratelimit.Limit) (bool, time.Duration) {
	dec, err := d.limits.buckets.Allow(r.Context(), key, limit)
	if err != nil {
		d.cfg.Logger.WarnContext(r.Context(), "dashboard: rate limiter failed; request let through", "err", err)
		return true, 0
	}
	return dec.Allowed, dec.RetryAfter
}

// allowKey is allow for work done outside a request's handler (mail on
// its way, say): the same bucket, the same leniency when the limiter
// fails.
func (d *Dashboard) allowKey(ctx context.Context, key string, limit ratelimit.Limit) (bool, time.Duration) {
	dec, err := d.limits.buckets.Allow(ctx, key, limit)
	if err != nil {
		d.cfg.Logger.WarnContext(ctx, "dashboard: rate limiter failed; request let through", "err", err)
		return true, 0
	}
	return dec.Allowed, dec.RetryAfter
}

// The limits of the account pages, in the deployment's limiter like every
// other: mail per recipient (mailBurst, then one per mailEvery), password
// reset requests per client address, and password checks (changing it,
// or confirming an email while signed out) per account.
var (
	mailLimit          = ratelimit.Limit{PerSecond: 1 / mailEvery.Seconds(), Burst: mailBurst}
	forgotLimit        = ratelimit.Limit{PerSecond: 1.0 / 6, Burst: 10}
	passwordCheckLimit = ratelimit.Limit{PerSecond: 1.0 / 12, Burst: 5}
)

// retryAfter sets the Retry-After header of a refusal.
func retryAfter(w http.ResponseWriter, wait time.Duration) {
	w.Header().Set("Retry-After", strconv.Itoa(int(wait.Seconds())+1))
}

// signinAllowed applies the sign-in limits to an attempt for email: the
// client address's bucket, then the email's quota of failures, from which
// the attempt takes one unit in advance (so that concurrent guesses count)
// unless the address refused it. A successful attempt calls succeeded,
// which gives the unit back: only failures that passed the address limit
// count against an email, so no one is locked out by attempts refused
// elsewhere.
func (d *Dashboard) signinAllowed(r *http.Request, email string) (ok bool, wait time.Duration, succeeded func()) {
	succeeded = func() {}
	if ok, wait := d.allow(r, "signin-ip:"+d.clientKey(r), d.cfg.SignInLimit); !ok {
		return false, wait, succeeded
	}
	key := "signin-email:" + emailKey(email)
	dec, err := d.limits.quotas.Take(r.Context(), key, 1, d.cfg.SignInFailures)
	if err != nil {
		d.cfg.Logger.WarnContext(r.Context(), "dashboard: rate limiter failed; sign-in let through", "err", err)
		return true, 0, succeeded
	}
	if !dec.Allowed {
		return false, dec.Reset, succeeded
	}
	return true, 0, func() {
		ctx := context.WithoutCancel(r.Context())
		if err := d.limits.quotas.Refund(ctx, key, 1, d.cfg.SignInFailures, dec.Window); err != nil {
			d.cfg.Logger.WarnContext(ctx, "dashboard: rate limiter failed to give back a sign-in", "err", err)
		}
	}
}

// emailKey names an email in the limiter: a hash of its lower-case form,
// of fixed length whatever was typed, and not the address itself.
func emailKey(email string) string {
	sum := sha256.Sum256([]byte(strings.ToLower(email)))
	return hex.EncodeToString(sum[:16])
}

// signupLimit is the bucket of sign-ups per client address: SignupsPerHour
// an hour, in bursts of 5 (or a twelfth of the hour's, if more).
func (d *Dashboard) signupLimit() ratelimit.Limit {
	n := d.cfg.SignupsPerHour
	return ratelimit.Limit{PerSecond: float64(n) / 3600, Burst: max(min(n, 5), n/12)}
}

// demoLimit is the bucket of demo validations per client address:
// DemoRate a minute, as many at once.
func (d *Dashboard) demoLimit() ratelimit.Limit {
	return ratelimit.Limit{PerSecond: float64(d.cfg.DemoRate) / 60, Burst: d.cfg.DemoRate}
}

// bulkQuota is the free bulk tool's quota per account: BulkLimit
// addresses per fixed window of BulkWindow, in the deployment's limiter
// (a ratelimit.Counter, shared by every instance). A submission of n
// addresses takes n at once, all or nothing, before it is enqueued, so
// that concurrent submissions cannot overshoot; a refused one is 429 and
// submits nothing, and one whose enqueue fails gives its n back
// ([Dashboard.refundBulk]). The bulk page reads what is left by taking 0.
func (d *Dashboard) bulkQuota() ratelimit.Quota {
	return ratelimit.Quota{Limit: d.cfg.BulkLimit, Window: d.cfg.BulkWindow}
}

// bulkKey names an account's bulk quota.
func bulkKey(account string) string { return "bulk:" + account }

// refundBulk gives n addresses back to the account's bulk quota of window,
// when their submission failed.
func (d *Dashboard) refundBulk(ctx context.Context, account string, n int, window int64) {
	ctx = context.WithoutCancel(ctx)
	if err := d.limits.quotas.Refund(ctx, bulkKey(account), n, d.bulkQuota(), window); err != nil {
		d.cfg.Logger.WarnContext(ctx, "dashboard: bulk quota not given back", "err", err)
	}
}
