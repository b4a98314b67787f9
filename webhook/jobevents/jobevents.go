// Package jobevents connects the job queue to webhooks: it builds the
// validation.completed event that a job's completion writes to the
// webhook outbox, and the batch.completed event that a batch's last
// completion writes, for accounts whose enabled endpoint receives them.
//
// Neither jobs nor webhook imports the other; this package is the bridge
// between them. A host wires it into its worker pool:
//
//	events, err := jobevents.New(endpoints, nil)
//	...
//	pool, err := jobs.NewPool(queue, validator, &jobs.PoolConfig{
//		NewEvent:      events.NewEvent,
//		NewBatchEvent: events.NewBatchEvent,
//	})
//
// The backend's [jobs.Driver] then stores the event as a pending delivery
// in the same atomic step that completes the job, and a
// [webhook.Dispatcher] delivers it.
package jobevents

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/jobs"
	"github.com/validmail/validmail/webhook"
)

// DefaultTTL is how long an account's endpoint state is cached by default.
const DefaultTTL = 5 * time.Second

// maxCached bounds the cache; past it, expired entries are swept.
const maxCached = 10_000

// Config configures a [Source]. The zero value gives the defaults.
type Config struct {
	// TTL is how long the Source remembers whether an account has an
	// enabled endpoint. An endpoint created, enabled or removed takes up
	// to TTL to be noticed, unless the host calls [Source.Forget]. Zero
	// means [DefaultTTL]; negative disables the cache.
	TTL time.Duration
	// Now is the clock that stamps events and expires the cache. Nil
	// means time.Now.
	Now func() time.Time
}

// Source builds outbox events for completed jobs. It is safe for
// concurrent use. Create it with [New].
type Source struct {
	endpoints webhook.Endpoints
	ttl       time.Duration
	now       func() time.Time

	mu    sync.Mutex
	cache map[string]cached // account id → endpoint state
}

type cached struct {
	endpoint *webhook.Endpoint // nil: no enabled endpoint
	expires  time.Time
}

// New returns a Source that looks accounts' endpoints up in endpoints.
// cfg may be nil.
func New(endpoints webhook.Endpoints, cfg *Config) (*Source, error) {
	if endpoints == nil {
		return nil, errors.New("jobevents: New needs endpoints")
	}
	var c Config
	if cfg != nil {
		c = *cfg
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return &Source{
		endpoints: endpoints,
		ttl:       cmp.Or(c.TTL, DefaultTTL),
		now:       c.Now,
		cache:     make(map[string]cached),
	}, nil
}

// NewEvent has the signature of [jobs.PoolConfig.NewEvent]. For a job
// whose account has an enabled endpoint that receives validation.completed
// events it returns a
// [webhook.TypeValidationCompleted] event with a new id, whose payload is
//
//	{"type":"validation.completed","timestamp":"…","data":{"job_id":"…","result":{…}}}
//
// with result as the API encodes it. For any other account it returns
// nil: nothing is written to the outbox. An error looking the endpoint
// up is returned, so the pool retries the job rather than completing it
// without its event.
func (s *Source) NewEvent(ctx context.Context, job jobs.Job, result emailcheck.Result) (*jobs.Event, error) {
	ok, err := s.wants(ctx, job.AccountID, webhook.TypeValidationCompleted)
	if err != nil || !ok {
		return nil, err
	}
	body, err := json.Marshal(result)
	if err != nil {
		return nil, fmt.Errorf("jobevents: encoding the result of job %s: %w", job.ID, err)
	}
	ev, err := webhook.NewEvent(job.AccountID, job.ID, body, s.now())
	if err != nil {
		return nil, err
	}
	return &jobs.Event{ID: ev.ID, Type: ev.Type, CreatedAt: ev.CreatedAt, Payload: ev.Payload}, nil
}

// NewBatchEvent has the signature of [jobs.PoolConfig.NewBatchEvent]. For
// a job whose account has an enabled endpoint that receives
// batch.completed events it returns a [webhook.TypeBatchCompleted] event
// with a new id; the backend writes it only if the job is its batch's
// last, with the payload [jobs.BatchEventPayload] describes:
//
//	{"type":"batch.completed","timestamp":"…","data":{"batch_id":"…","total":n,"counts":{…}}}
func (s *Source) NewBatchEvent(ctx context.Context, job jobs.Job) (*jobs.BatchEvent, error) {
	ok, err := s.wants(ctx, job.AccountID, webhook.TypeBatchCompleted)
	if err != nil || !ok {
		return nil, err
	}
	return &jobs.BatchEvent{ID: webhook.NewEventID(), Type: webhook.TypeBatchCompleted, CreatedAt: s.now()}, nil
}

// Forget drops what the Source remembers about the account's endpoint,
// so the next completion looks it up again. Call it after changing the
// endpoint through the same process.
func (s *Source) Forget(accountID string) {
	s.mu.Lock()
	delete(s.cache, accountID)
	s.mu.Unlock()
}

// wants reports whether the account has an enabled endpoint that
// receives events of the type.
func (s *Source) wants(ctx context.Context, account, eventType string) (bool, error) {
	now := s.now()
	if s.ttl > 0 {
		s.mu.Lock()
		c, ok := s.cache[account]
		s.mu.Unlock()
		if ok && now.Before(c.expires) {
			return c.endpoint != nil && c.endpoint.Wants(eventType), nil
		}
	}
	ep, err := s.endpoints.GetEndpoint(ctx, account)
	switch {
	case errors.Is(err, webhook.ErrNotFound):
	case err != nil:
		return false, fmt.Errorf("jobevents: looking up the endpoint of account %s: %w", account, err)
	}
	var on *webhook.Endpoint
	if err == nil && ep.Enabled {
		on = &webhook.Endpoint{Enabled: true, Events: ep.Events}
	}
	if s.ttl > 0 {
		s.mu.Lock()
		if len(s.cache) >= maxCached {
			for a, c := range s.cache {
				if !now.Before(c.expires) {
					delete(s.cache, a)
				}
			}
		}
		s.cache[account] = cached{endpoint: on, expires: now.Add(s.ttl)}
		s.mu.Unlock()
	}
	return on != nil && on.Wants(eventType), nil
}

// listLimit bounds the deliveries [List] reads.
const listLimit = 100_000

// List returns the job events in the account's outbox as the jobs package
// wrote them (ID, Type, CreatedAt, Payload), oldest first: the view
// [jobstest.Backend.Events] asks for, for any backend whose outbox is a
// [webhook.Outbox]. Test events (no job id) are left out.
//
// [jobstest.Backend.Events]: https://pkg.go.dev/github.com/validmail/validmail/jobs/jobstest#Backend
func List(ctx context.Context, outbox webhook.Outbox, accountID string) ([]jobs.Event, error) {
	ds, err := outbox.Deliveries(ctx, webhook.ListParams{AccountID: accountID, Limit: listLimit})
	if err != nil {
		return nil, err
	}
	out := make([]jobs.Event, 0, len(ds))
	for _, d := range slices.Backward(ds) {
		if d.JobID == "" {
			continue
		}
		out = append(out, jobs.Event{ID: d.ID, Type: d.Type, CreatedAt: d.CreatedAt, Payload: d.Payload})
	}
	return out, nil
}
