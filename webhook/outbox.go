package webhook

import (
	"context"
	"errors"
	"slices"
	"time"
)

// Errors returned by [Outbox] and [Endpoints] implementations. Backends
// translate their own "no rows" errors into these, and
// webhooktest checks that they do.
var (
	// ErrNotFound reports an unknown event or an account without an
	// endpoint.
	ErrNotFound = errors.New("webhook: not found")
	// ErrDuplicate reports an event whose id is already in the outbox.
	ErrDuplicate = errors.New("webhook: duplicate event")
	// ErrLeaseLost reports a state change with a lease token that no
	// longer holds the delivery: it was leased again after its lease
	// expired, or it is already finished.
	ErrLeaseLost = errors.New("webhook: lease lost")
	// ErrEndpointChanged reports a disable request for an endpoint whose
	// URL has changed since the failing delivery started.
	ErrEndpointChanged = errors.New("webhook: endpoint changed")
)

// State is where a delivery stands.
type State string

// Delivery states. A delivery starts pending and ends delivered or dead.
const (
	StatePending   State = "pending"
	StateDelivered State = "delivered"
	StateDead      State = "dead"
)

// Attempt is one HTTP request made to deliver an event.
type Attempt struct {
	At         time.Time     // when the request started
	Duration   time.Duration // until the response headers, or the error
	StatusCode int           // 0 when no response arrived
	Error      string        // why it failed, one of the Reason* values; empty on success
	URL        string        // the endpoint it was sent to
}

// Lease is a dispatcher's exclusive, time-limited claim on a delivery.
type Lease struct {
	EventID string
	Token   string    // chosen by the outbox; unique per lease
	Expires time.Time // after this the delivery may be leased again
}

// Delivery is an event in the outbox with its delivery history.
type Delivery struct {
	Event
	State       State
	Attempts    []Attempt // oldest first
	NextAttempt time.Time // when it is due; zero once finished
	FinishedAt  time.Time // when it was delivered or declared dead
	Reason      string    // why it is dead
	Lease       Lease     // set only in deliveries returned by Outbox.Lease
}

// LeaseParams selects deliveries to lease.
type LeaseParams struct {
	Now      time.Time     // deliveries due at or before Now are eligible
	Limit    int           // at most this many; must be positive
	Duration time.Duration // the lease expires at Now+Duration
}

// ListParams selects deliveries to list.
type ListParams struct {
	AccountID string
	Limit     int // at most this many; zero or negative means 50
	// Before, when set, lists only deliveries older than this position:
	// the [Delivery.Position] of the previous page's last delivery, so
	// that pages never skip or repeat one.
	Before *Position
}

// Position is a delivery's place in an account's log, newest first: by
// creation time (to the microsecond), then by event id.
type Position struct {
	CreatedAt time.Time
	ID        string
}

// Position returns d's place in its account's delivery log.
func (d Delivery) Position() Position {
	return Position{CreatedAt: d.CreatedAt.Truncate(time.Microsecond), ID: d.ID}
}

// Older reports whether a delivery created at createdAt with event id id
// comes after p in the log (is older).
func (p Position) Older(createdAt time.Time, id string) bool {
	c, pc := createdAt.UnixMicro(), p.CreatedAt.UnixMicro()
	return c < pc || (c == pc && id < p.ID)
}

// DefaultListLimit is the number of deliveries listed when
// ListParams.Limit is not positive.
const DefaultListLimit = 50

// Outbox is the durable store of events waiting for delivery. Each
// backend (memory, PostgreSQL, Redis) implements it;
// webhook/webhooktest defines the contract.
//
// Every method may be called concurrently, from one process or several
// sharing the backend, and must honour ctx: return promptly with an error
// once ctx is done. State changes (RecordAttempt, Reschedule,
// MarkDelivered, MarkDead) are compare-and-set on the lease token: each
// succeeds only while the token still holds the delivery and returns
// ErrLeaseLost otherwise, or ErrNotFound for an unknown event id.
//
// Delivery is at least once: an event leased but never finished (its
// dispatcher crashed) becomes eligible again when its lease expires.
type Outbox interface {
	// Enqueue stores a pending event, due at ev.CreatedAt. It returns
	// ErrDuplicate if an event with the same ID exists. Payload is stored
	// byte for byte, and Batch, when set, in a field of its own; an
	// event with Batch, or with a payload in the earlier stored form
	// ([StoreBatchCompleted]), is returned by Lease and Deliveries with
	// Batch set and the bytes it stands for as Payload ([Event.Expand]),
	// the same bytes every time.
	Enqueue(ctx context.Context, ev Event) error

	// Lease claims up to p.Limit pending deliveries due at or before p.Now
	// that no unexpired lease holds, earliest due first, and returns them
	// with a new Lease each. A delivery held by an unexpired lease is
	// never returned, even to concurrent callers.
	Lease(ctx context.Context, p LeaseParams) ([]Delivery, error)

	// RecordAttempt appends an attempt to the delivery's history. The
	// delivery stays leased.
	RecordAttempt(ctx context.Context, l Lease, a Attempt) error

	// Reschedule releases the lease and makes the delivery due again at
	// next. Its attempts are kept.
	Reschedule(ctx context.Context, l Lease, next time.Time) error

	// MarkDelivered finishes the delivery as delivered at the given time.
	// It is never leased again.
	MarkDelivered(ctx context.Context, l Lease, at time.Time) error

	// MarkDead finishes the delivery as dead at the given time, with a
	// reason shown in the delivery log. It is never leased again.
	MarkDead(ctx context.Context, l Lease, at time.Time, reason string) error

	// Deliveries returns the account's most recent deliveries, in any
	// state, newest event (by CreatedAt) first, without their Lease.
	Deliveries(ctx context.Context, p ListParams) ([]Delivery, error)

	// Pending returns the number of deliveries not yet finished, leased
	// or not, across all accounts.
	Pending(ctx context.Context) (int, error)

	// Prune deletes finished (delivered or dead) deliveries whose
	// FinishedAt is before the given time and returns how many it
	// deleted. Pending deliveries are never pruned.
	Prune(ctx context.Context, before time.Time) (int, error)
}

// OldestPender is implemented by an [Outbox] that can tell when its
// oldest pending delivery was first due, for an operator's metrics.
type OldestPender interface {
	// OldestPending returns the earliest due time of the pending
	// deliveries (a leased one counts by its lease's expiry where the
	// backend keeps no other), or the zero time when none is pending.
	OldestPending(ctx context.Context) (time.Time, error)
}

// RotationGrace is how long a replaced secret keeps signing messages after
// a rotation, so receivers can switch without losing events.
const RotationGrace = 24 * time.Hour

// PreviousSecret is a replaced secret that still signs until it expires.
type PreviousSecret struct {
	Secret    string
	ExpiresAt time.Time
}

// Endpoint is an account's webhook configuration. Each account has at
// most one endpoint.
type Endpoint struct {
	AccountID       string
	URL             string
	Enabled         bool
	Secret          string           // the current secret, "whsec_…"
	PreviousSecrets []PreviousSecret // replaced secrets, oldest first
	DisabledReason  string           // why it was disabled automatically; empty otherwise
	// Events lists the event types the endpoint receives, in
	// [EventTypes]' order; empty means the default: all of them, but a
	// list's addresses' validation.completed ([Endpoint.WantsListAddresses]).
	// Test events are always sent.
	Events    []string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Wants reports whether the endpoint receives events of the type.
func (e Endpoint) Wants(eventType string) bool {
	return eventType == TypeTest || len(e.Events) == 0 || slices.Contains(e.Events, eventType)
}

// NormalizeEvents returns types in [EventTypes]' order without
// duplicates, and nil when they name none (the default): the form
// [Endpoints] store. Every type named is not the default: an endpoint
// that names validation.completed receives it for a list's addresses too
// ([Endpoint.WantsListAddresses]).
func NormalizeEvents(types []string) []string {
	var out []string
	for _, t := range EventTypes {
		if slices.Contains(types, t) {
			out = append(out, t)
		}
	}
	return out
}

// WantsListAddresses reports whether the endpoint receives a
// validation.completed event for each address of a list (a batch
// uploaded whole, which may hold a million addresses): only when it
// names the type. By default (no types named) a list sends its
// batch.completed alone, other batches both.
func (e Endpoint) WantsListAddresses() bool {
	return len(e.Events) > 0 && slices.Contains(e.Events, TypeValidationCompleted)
}

// SigningSecrets returns the secrets that sign a message sent at now:
// the current one, then each previous one that has not expired.
func (e Endpoint) SigningSecrets(now time.Time) []string {
	out := []string{e.Secret}
	for _, p := range e.PreviousSecrets {
		if now.Before(p.ExpiresAt) {
			out = append(out, p.Secret)
		}
	}
	return out
}

// PutEndpointParams creates or updates an endpoint.
type PutEndpointParams struct {
	AccountID string
	URL       string
	Enabled   bool
	// Secret is the secret of a new endpoint; it is ignored (the secrets
	// are kept) when the endpoint exists.
	Secret string
	// Events is the event types the endpoint receives, as
	// [NormalizeEvents] returns them: nil means the default.
	Events []string
	Now    time.Time
}

// RotateSecretParams replaces an endpoint's secret.
type RotateSecretParams struct {
	AccountID string
	Secret    string    // the new current secret
	Now       time.Time // previous secrets expired at Now are dropped
	// PreviousExpiresAt is when the replaced secret stops signing,
	// normally Now+RotationGrace.
	PreviousExpiresAt time.Time
}

// DisableEndpointParams disables an endpoint after its receiver asked us
// to stop (HTTP 410 Gone).
type DisableEndpointParams struct {
	AccountID string
	URL       string // the URL that answered; the endpoint must still have it
	Reason    string
	Now       time.Time
}

// Endpoints stores each account's endpoint. Like [Outbox], every method
// may be called concurrently and must honour ctx.
type Endpoints interface {
	// GetEndpoint returns the account's endpoint, or ErrNotFound.
	GetEndpoint(ctx context.Context, accountID string) (Endpoint, error)

	// PutEndpoint creates the account's endpoint with p.Secret, or
	// updates URL, Enabled and Events of an existing one and keeps its
	// secrets.
	// Enabling clears DisabledReason. It reports whether it created the
	// endpoint. Creating without a secret that [ParseSecret] accepts
	// returns ErrInvalidSecret.
	PutEndpoint(ctx context.Context, p PutEndpointParams) (Endpoint, bool, error)

	// DeleteEndpoint removes the account's endpoint, or returns
	// ErrNotFound.
	DeleteEndpoint(ctx context.Context, accountID string) error

	// RotateSecret makes p.Secret the current secret. The replaced one
	// joins PreviousSecrets with ExpiresAt p.PreviousExpiresAt; previous
	// secrets expired at p.Now are dropped. It returns ErrNotFound for an
	// account without an endpoint and ErrInvalidSecret for a p.Secret
	// that [ParseSecret] rejects.
	RotateSecret(ctx context.Context, p RotateSecretParams) (Endpoint, error)

	// DisableEndpoint sets Enabled to false and DisabledReason to
	// p.Reason if the endpoint's URL is still p.URL; otherwise it returns
	// ErrEndpointChanged and changes nothing. It returns ErrNotFound for
	// an account without an endpoint.
	DisableEndpoint(ctx context.Context, p DisableEndpointParams) error
}
