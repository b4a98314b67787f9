// Package backend defines [Backend], the storage of one deployment: every
// interface the service runs on (accounts, credits, jobs, the webhook
// outbox and endpoints, the rate limiter, the console's sessions, …) over
// one backend. The backends (store/memstore, store/pgstore,
// store/redisstore) each return one from their NewBackend, store/storeurl
// opens one from a URL, and httpapi/service runs a deployment from one.
//
// The interfaces themselves live in the packages that use them
// ([store.Accounts], [credits.Store], [jobsdriver.Driver], [webhook.Outbox], …);
// this package only gathers them. It imports the domain packages and the
// rate limiter's contract (store/ratelimit, which imports nothing of the
// project), so that the store package itself imports nothing of the
// project.
package backend

import (
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/validmail/validmail/billing"
	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/jobs/jobsdriver"
	"github.com/validmail/validmail/store"
	"github.com/validmail/validmail/store/ratelimit"
	"github.com/validmail/validmail/webhook"
)

// Backend is the storage of one deployment: every interface the service
// runs on, over one backend (process memory, a PostgreSQL schema, a Redis
// key prefix). Each backend package returns one from a single constructor
// (memstore.NewBackend, pgstore.NewBackend, redisstore.NewBackend), and
// store/storeurl opens one from a URL.
//
// The fields are separate values, not one value asserted to each
// interface, because the job queue and the webhook outbox are both queues
// and share method names (Lease, Enqueue, ...). A host may replace any
// field before handing the Backend on, for example its own [store.Accounts] in
// front of the backend's.
type Backend struct {
	// Name is the kind of backend: "memory", "postgres" or "redis".
	Name string
	// Shared reports whether several processes can serve one deployment
	// over the backend. A memory backend is not shared: its data ends
	// with the process.
	Shared bool

	// Accounts stores accounts and API keys.
	Accounts store.Accounts
	// Credits is the credit ledger's storage.
	Credits credits.Store
	// Jobs is the job queue's storage, the backend's driver: a host
	// hands it to jobs.NewQueue and calls the Queue, never the driver.
	// Every backend here also implements jobsdriver.ChargingDriver and
	// jobsdriver.Notifier.
	Jobs jobsdriver.Driver
	// Outbox holds the webhook events to deliver.
	Outbox webhook.Outbox
	// Endpoints holds each account's webhook endpoint.
	Endpoints webhook.Endpoints
	// Limiter is a rate limiter shared by every process on the backend,
	// which keeps quotas too (a ratelimit.Counter) on every backend here;
	// nil means the backend has none and each process limits on its own.
	Limiter ratelimit.Limiter
	// Passwords holds the dashboard's password hashes; nil means the
	// backend keeps none (the dashboard then cannot sign anyone in).
	Passwords store.Passwords
	// Sessions holds the dashboard's sessions, shared by every process
	// on the backend.
	Sessions store.SessionStore
	// Tokens holds the single-use tokens the dashboard mails; nil means
	// the backend keeps none (the dashboard then cannot confirm emails or
	// reset passwords).
	Tokens store.Tokens
	// Usage counts validations by account, month and status; nil means
	// the backend keeps no counts.
	Usage store.Usage
	// Health reports what the backend knows of its own state beyond
	// answering (a Redis server that lost its data, persistence off);
	// nil means nothing more.
	Health HealthChecker
	// Billing records the checkouts the service opens to sell credits;
	// nil means the backend keeps none (the service then sells nothing).
	Billing billing.Store
	// Notices keeps each account's choice of a mail when a batch
	// finishes, and the notices to mail; nil means the backend keeps
	// none (the console then offers no such mail).
	Notices store.Notices
	// Team keeps the members each account's owner invited and their
	// invitations; nil means the backend keeps none (the console then
	// has no team page, and only owners sign in).
	Team store.Team
	// Audit keeps each account's audit log; nil means the backend keeps
	// none.
	Audit store.AuditLog
	// TwoFactor keeps the logins' second factors (TOTP and recovery
	// codes); nil means the backend keeps none (the console then offers
	// no second factor).
	TwoFactor store.TwoFactor
	// AccountSlots counts each account's jobs being validated across the
	// deployment, for a plan's concurrent jobs; nil means the backend
	// keeps none (each instance then bounds an account on its own).
	AccountSlots jobsdriver.AccountSlots

	mu      sync.Mutex
	closers []func() error
	closed  bool
}

// OnClose registers f to run when the Backend is closed, after the
// functions registered before it: the connection pool a backend opened
// itself, for example. Hosts that pass their own pool close it
// themselves.
func (b *Backend) OnClose(f func() error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closers = append(b.closers, f)
}

// Close runs the functions registered with [Backend.OnClose], the last
// registered first, and returns their errors joined. Only the first call
// does anything; a nil Backend is closed already.
func (b *Backend) Close() error {
	if b == nil {
		return nil
	}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	fs := slices.Clone(b.closers)
	b.mu.Unlock()
	var errs []error
	for _, f := range slices.Backward(fs) {
		errs = append(errs, f())
	}
	return errors.Join(errs...)
}

// ErrIncomplete reports a [Backend] that lacks a required field;
// [Backend.Check] wraps it with the field's name.
var ErrIncomplete = errors.New("backend: incomplete backend")

// Check reports whether every required field is set: all but Limiter.
func (b *Backend) Check() error {
	if b == nil {
		return errors.Join(ErrIncomplete, errors.New("nil backend"))
	}
	var missing []string
	if b.Accounts == nil {
		missing = append(missing, "Accounts")
	}
	if b.Credits == nil {
		missing = append(missing, "Credits")
	}
	if b.Jobs == nil {
		missing = append(missing, "Jobs")
	}
	if b.Outbox == nil {
		missing = append(missing, "Outbox")
	}
	if b.Endpoints == nil {
		missing = append(missing, "Endpoints")
	}
	if len(missing) > 0 {
		return &incompleteError{missing}
	}
	return nil
}

type incompleteError struct{ fields []string }

func (e *incompleteError) Error() string {
	s := "backend: incomplete backend: no "
	for i, f := range e.fields {
		if i > 0 {
			s += ", "
		}
		s += f
	}
	return s
}

func (e *incompleteError) Unwrap() error { return ErrIncomplete }

// HealthChecker is implemented by a backend that can tell more about its
// state than that it answers; readiness probes ask it.
type HealthChecker interface {
	// CheckHealth returns an error when the backend must not serve (one
	// wrapping [store.ErrDataLost] when it lost its data), and notes on
	// conditions an operator should know about that do not stop it
	// serving, such as persistence turned off.
	CheckHealth(ctx context.Context) (notes []string, err error)
}
