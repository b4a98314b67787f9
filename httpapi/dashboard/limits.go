package dashboard

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/validmail/validmail/store/ratelimit"
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
// other: password reset requests per client address, and password checks
// (changing it, or confirming an email while signed out) per account.
// The mail budgets are in mailbudget.go.
var (
	forgotLimit        = ratelimit.Limit{PerSecond: 1.0 / 6, Burst: 10}
	passwordCheckLimit = ratelimit.Limit{PerSecond: 1.0 / 12, Burst: 5}
)

// retryAfter sets the Retry-After header of a refusal.
func retryAfter(w http.ResponseWriter, wait time.Duration) {
	w.Header().Set("Retry-After", strconv.Itoa(int(wait.Seconds())+1))
}

// signinVerdict is what the sign-in limits make of an attempt.
type signinVerdict int

const (
	// signinGo: check the password and sign in if it is right.
	signinGo signinVerdict = iota
	// signinRefused: refuse the attempt unchecked (429).
	signinRefused
	// signinByMail: the email's failures from everywhere are at their
	// cap and the browser is not a known device. The password is
	// checked, but the answer is the same whether it is right or wrong
	// (so the guesses past the cap learn nothing); if it is right, the
	// address is mailed a link that finishes the sign-in in this browser
	// (signinlink.go).
	signinByMail
)

// signinAllowed applies the sign-in limits to an attempt for email: the
// client address's bucket, then the failures of the email from the
// client's network ([Config.SignInFailures]), then the failures of the
// email from everywhere ([Config.SignInFailuresPerEmail]). Each quota
// takes one unit in advance (so that concurrent guesses count) unless a
// limit before it refused the attempt. A successful attempt calls
// succeeded, which gives the units back: only failures count, and only
// those that passed the limits before, so a stranger's failures lock out
// the stranger's own network, not the owner, who signs in from another.
// An attempt from a known device of the email ([Dashboard.knownDevice])
// skips the last quota, so that no flood from many networks locks the
// owner out of her own browsers; any other browser, when the last quota
// is full, gets signinByMail, its network's unit kept: a flood from many
// networks cannot lock the owner out of a new browser either, while each
// network's guesses stay limited and those past the cap tell nothing.
func (d *Dashboard) signinAllowed(r *http.Request, email string) (verdict signinVerdict, wait time.Duration, succeeded func()) {
	succeeded = func() {}
	client := d.clientKey(r)
	if ok, wait := d.allow(r, "signin-ip:"+client, d.cfg.SignInLimit); !ok {
		return signinRefused, wait, succeeded
	}
	netKey := "signin-net:" + pairKey(email, client)
	net, err := d.limits.quotas.Take(r.Context(), netKey, 1, d.cfg.SignInFailures)
	if err != nil {
		d.cfg.Logger.WarnContext(r.Context(), "dashboard: rate limiter failed; sign-in let through", "err", err)
		return signinGo, 0, succeeded
	}
	if !net.Allowed {
		return signinRefused, net.Reset, succeeded
	}
	giveBack := func(key string, q ratelimit.Quota, window int64) {
		ctx := context.WithoutCancel(r.Context())
		if err := d.limits.quotas.Refund(ctx, key, 1, q, window); err != nil {
			d.cfg.Logger.WarnContext(ctx, "dashboard: rate limiter failed to give back a sign-in", "err", err)
		}
	}
	if d.knownDevice(r, email) {
		// The owner's browser: not to be locked out by failures from
		// everywhere (see device.go), and not counting towards them.
		return signinGo, 0, func() { giveBack(netKey, d.cfg.SignInFailures, net.Window) }
	}
	allKey := "signin-email:" + emailKey(email)
	all, err := d.limits.quotas.Take(r.Context(), allKey, 1, d.cfg.SignInFailuresPerEmail)
	if err != nil {
		d.cfg.Logger.WarnContext(r.Context(), "dashboard: rate limiter failed; sign-in let through", "err", err)
		return signinGo, 0, func() { giveBack(netKey, d.cfg.SignInFailures, net.Window) }
	}
	if !all.Allowed {
		return signinByMail, all.Reset, func() { giveBack(netKey, d.cfg.SignInFailures, net.Window) }
	}
	return signinGo, 0, func() {
		giveBack(netKey, d.cfg.SignInFailures, net.Window)
		giveBack(allKey, d.cfg.SignInFailuresPerEmail, all.Window)
	}
}

// emailKey names an email in the limiter: a hash of its lower-case form,
// of fixed length whatever was typed, and not the address itself.
func emailKey(email string) string {
	sum := sha256.Sum256([]byte(strings.ToLower(email)))
	return hex.EncodeToString(sum[:16])
}

// pairKey names an email and a client address's key together in the
// limiter, hashed like [emailKey].
func pairKey(email, client string) string {
	sum := sha256.Sum256([]byte(strings.ToLower(email) + "\x00" + client))
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
// With [Config.Plans], the limit is the account's plan's console
// allowance where the plan sets one (its plan read from Accounts; a
// failed read keeps BulkLimit).
func (d *Dashboard) bulkQuota(ctx context.Context, account string) ratelimit.Quota {
	q := ratelimit.Quota{Limit: d.cfg.BulkLimit, Window: d.cfg.BulkWindow}
	if d.cfg.Plans == nil {
		return q
	}
	a, err := d.cfg.Accounts.GetAccount(ctx, account)
	if err != nil {
		return q
	}
	if n := d.cfg.Plans.For(a.Plan).ConsoleAllowance; n > 0 {
		q.Limit = n
	}
	return q
}

// bulkKey names an account's bulk quota.
func bulkKey(account string) string { return "bulk:" + account }

// refundBulk gives n addresses back to the account's bulk quota of window,
// when their submission failed.
func (d *Dashboard) refundBulk(ctx context.Context, account string, n int, window int64) {
	ctx = context.WithoutCancel(ctx)
	if err := d.limits.quotas.Refund(ctx, bulkKey(account), n, d.bulkQuota(ctx, account), window); err != nil {
		d.cfg.Logger.WarnContext(ctx, "dashboard: bulk quota not given back", "err", err)
	}
}
