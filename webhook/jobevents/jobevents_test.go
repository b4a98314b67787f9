package jobevents_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/jobs"
	"github.com/validmail/validmail/store/memstore"
	"github.com/validmail/validmail/webhook"
	"github.com/validmail/validmail/webhook/jobevents"
)

// countingEndpoints wraps an endpoint store, counting lookups and failing
// them on demand.
type countingEndpoints struct {
	webhook.Endpoints
	mu    sync.Mutex
	calls int
	fail  error
}

func (c *countingEndpoints) GetEndpoint(ctx context.Context, account string) (webhook.Endpoint, error) {
	c.mu.Lock()
	c.calls++
	fail := c.fail
	c.mu.Unlock()
	if fail != nil {
		return webhook.Endpoint{}, fail
	}
	return c.Endpoints.GetEndpoint(ctx, account)
}

func (c *countingEndpoints) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls
}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func put(t *testing.T, eps webhook.Endpoints, account string, enabled bool) {
	t.Helper()
	_, _, err := eps.PutEndpoint(t.Context(), webhook.PutEndpointParams{
		AccountID: account, URL: "https://hooks.example.org/" + account, Enabled: enabled,
		Secret: webhook.NewSecret(), Now: time.Now(),
	})
	if err != nil {
		t.Fatal(err)
	}
}

func completed(account, id, email string) (jobs.Job, emailcheck.Result) {
	res := emailcheck.Result{Email: email}
	res.Confidence.Status = emailcheck.StatusLikely
	res.Confidence.Score = 90
	res.Meta.Source = emailcheck.SourceAPIAsync
	return jobs.Job{ID: id, AccountID: account, Email: email, State: jobs.StateCompleted, Result: &res}, res
}

func TestNewEvent(t *testing.T) {
	t.Parallel()
	w := memstore.NewBackend().Outbox.(*memstore.Webhooks)
	put(t, w, "on", true)
	put(t, w, "off", false)
	clk := &clock{t: time.Date(2030, 5, 6, 7, 8, 9, 123e6, time.UTC)}
	src, err := jobevents.New(w, &jobevents.Config{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		account string
		want    bool
	}{
		{"on", true},
		{"off", false},
		{"none", false},
	} {
		job, res := completed(tc.account, "42", "a@example.org")
		ev, _, err := src.NewEvents(t.Context(), job, res)
		if err != nil {
			t.Fatalf("%s: %v", tc.account, err)
		}
		if (ev != nil) != tc.want {
			t.Fatalf("%s: event %+v, want one: %v", tc.account, ev, tc.want)
		}
		if ev == nil {
			continue
		}
		if ev.Type != webhook.TypeValidationCompleted || !ev.CreatedAt.Equal(clk.Now()) || len(ev.ID) < 10 {
			t.Errorf("event %+v: want type %s created %v", ev, webhook.TypeValidationCompleted, clk.Now())
		}
		var body struct {
			Type      string
			Timestamp string
			Data      struct {
				JobID  string `json:"job_id"`
				Result emailcheck.Result
			}
		}
		if err := json.Unmarshal(ev.Payload, &body); err != nil {
			t.Fatal(err)
		}
		if body.Type != webhook.TypeValidationCompleted || body.Timestamp != "2030-05-06T07:08:09.123Z" ||
			body.Data.JobID != "42" || body.Data.Result.Email != "a@example.org" ||
			body.Data.Result.Confidence.Status != emailcheck.StatusLikely || body.Data.Result.Meta.Source != emailcheck.SourceAPIAsync {
			t.Errorf("payload %s", ev.Payload)
		}
	}
}

func TestNewEventCachesLookups(t *testing.T) {
	t.Parallel()
	w := memstore.NewBackend().Outbox.(*memstore.Webhooks)
	eps := &countingEndpoints{Endpoints: w}
	clk := &clock{t: time.Now()}
	src, err := jobevents.New(eps, &jobevents.Config{TTL: time.Minute, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	hasEvent := func() bool {
		t.Helper()
		job, res := completed("acct", "1", "a@example.org")
		ev, _, err := src.NewEvents(t.Context(), job, res)
		if err != nil {
			t.Fatal(err)
		}
		return ev != nil
	}
	steps := []struct {
		name  string
		do    func()
		want  bool
		calls int
	}{
		{"no endpoint", func() {}, false, 1},
		{"cached absence", func() { put(t, w, "acct", true) }, false, 1},
		{"expired", func() { clk.Advance(time.Minute) }, true, 2},
		{"cached presence", func() {}, true, 2},
		{"forgotten", func() { _ = w.DeleteEndpoint(t.Context(), "acct"); src.Forget("acct") }, false, 3},
	}
	for _, s := range steps {
		s.do()
		if got := hasEvent(); got != s.want {
			t.Fatalf("%s: event %v, want %v", s.name, got, s.want)
		}
		if n := eps.count(); n != s.calls {
			t.Fatalf("%s: %d lookups, want %d", s.name, n, s.calls)
		}
	}
}

func TestNewEventLookupError(t *testing.T) {
	t.Parallel()
	down := errors.New("database down")
	eps := &countingEndpoints{Endpoints: memstore.NewBackend().Outbox.(*memstore.Webhooks), fail: down}
	src, err := jobevents.New(eps, &jobevents.Config{TTL: -1})
	if err != nil {
		t.Fatal(err)
	}
	job, res := completed("acct", "1", "a@example.org")
	for range 2 {
		if ev, bev, err := src.NewEvents(t.Context(), job, res); !errors.Is(err, down) || ev != nil || bev != nil {
			t.Fatalf("NewEvents = %+v, %+v, %v; want %v", ev, bev, err, down)
		}
	}
	if n := eps.count(); n != 2 {
		t.Errorf("%d lookups with the cache disabled, want 2", n)
	}
}

func TestNewRejectsNilEndpoints(t *testing.T) {
	t.Parallel()
	if _, err := jobevents.New(nil, nil); err == nil {
		t.Error("New(nil) succeeded")
	}
}

// TestNewEventsOneLookup: one completion looks the endpoint up once, even
// without a cache, and gets the events its endpoint receives: the batch
// event only for a job of a batch.
func TestNewEventsOneLookup(t *testing.T) {
	t.Parallel()
	w := memstore.NewBackend().Outbox.(*memstore.Webhooks)
	eps := &countingEndpoints{Endpoints: w}
	at := time.Date(2030, 5, 6, 7, 8, 9, 0, time.UTC)
	src, err := jobevents.New(eps, &jobevents.Config{TTL: -1, Now: func() time.Time { return at }})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		account     string
		events      []string // the endpoint's; nil for every type
		batch       string
		ev, batchEv bool
	}{
		{"all", nil, "40", true, true},
		{"all-no-batch", nil, "", true, false},
		{"validations", []string{webhook.TypeValidationCompleted}, "40", true, false},
		{"batches", []string{webhook.TypeBatchCompleted}, "40", false, true},
	} {
		_, _, err := w.PutEndpoint(t.Context(), webhook.PutEndpointParams{
			AccountID: tc.account, URL: "https://hooks.example.org/x", Enabled: true,
			Secret: webhook.NewSecret(), Events: tc.events, Now: at,
		})
		if err != nil {
			t.Fatal(err)
		}
		job, res := completed(tc.account, "42", "a@example.org")
		job.BatchID = tc.batch
		before := eps.count()
		ev, bev, err := src.NewEvents(t.Context(), job, res)
		if err != nil {
			t.Fatal(err)
		}
		if n := eps.count() - before; n != 1 {
			t.Errorf("%s: %d endpoint lookups for one completion, want 1", tc.account, n)
		}
		if (ev != nil) != tc.ev || (bev != nil) != tc.batchEv {
			t.Fatalf("%s: events %+v, %+v; want %v, %v", tc.account, ev, bev, tc.ev, tc.batchEv)
		}
		if bev != nil && (bev.Type != webhook.TypeBatchCompleted || bev.AccountID != tc.account || bev.JobID != "42" ||
			!bev.CreatedAt.Equal(at) || bev.Payload != nil || ev != nil && bev.ID == ev.ID) {
			t.Errorf("%s: batch event %+v", tc.account, bev)
		}
	}
}

// notifier counts Notify calls.
type notifier struct {
	mu sync.Mutex
	n  int
}

func (c *notifier) Notify() { c.mu.Lock(); c.n++; c.mu.Unlock() }

func (c *notifier) count() int { c.mu.Lock(); defer c.mu.Unlock(); return c.n }

// TestAttach: Attach sets the pool's NewEvents; after a completion it wakes
// the dispatcher, unless the account is known to have no enabled
// endpoint, and always runs the host's own hook.
func TestAttach(t *testing.T) {
	t.Parallel()
	w := memstore.NewBackend().Outbox.(*memstore.Webhooks)
	put(t, w, "on", true)
	disp := &notifier{}
	src, err := jobevents.New(w, &jobevents.Config{Dispatcher: disp})
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	cfg := jobs.PoolConfig{OnComplete: func(context.Context, jobs.Job) { order = append(order, "host") }}
	src.Attach(&cfg)
	if cfg.NewEvents == nil || cfg.OnComplete == nil {
		t.Fatal("Attach left NewEvents or OnComplete unset")
	}
	for _, tc := range []struct {
		account string
		built   bool // NewEvents ran for the job, so the source knows the account
		wakes   int
	}{
		{"on", true, 1},     // an endpoint: its events go out now
		{"none", true, 0},   // known to have none: nothing was written
		{"other", false, 1}, // not known: woken, to be safe
	} {
		job, res := completed(tc.account, "1", "a@example.org")
		if tc.built {
			if _, _, err := cfg.NewEvents(t.Context(), job, res); err != nil {
				t.Fatal(err)
			}
		}
		before, hooks := disp.count(), len(order)
		cfg.OnComplete(t.Context(), job)
		if n := disp.count() - before; n != tc.wakes {
			t.Errorf("%s: %d wakes, want %d", tc.account, n, tc.wakes)
		}
		if len(order) != hooks+1 {
			t.Errorf("%s: the host's hook ran %d times, want once", tc.account, len(order)-hooks)
		}
	}
}

// TestListEvents: a list's jobs write their batch.completed alone to an
// endpoint of the default events, and validation.completed too to one
// that names it; the batch is asked about once.
func TestListEvents(t *testing.T) {
	t.Parallel()
	w := memstore.NewBackend().Outbox.(*memstore.Webhooks)
	asked := map[string]int{}
	var mu sync.Mutex
	src, err := jobevents.New(w, &jobevents.Config{TTL: -1, IsList: func(_ context.Context, _, batch string) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		asked[batch]++
		return batch == "list", nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		account     string
		events      []string
		batch       string
		ev, batchEv bool
	}{
		{"default-list", nil, "list", false, true},
		{"default-batch", nil, "batch", true, true},
		{"both-list", []string{webhook.TypeValidationCompleted, webhook.TypeBatchCompleted}, "list", true, true},
		{"validations-list", []string{webhook.TypeValidationCompleted}, "list", true, false},
		{"batches-list", []string{webhook.TypeBatchCompleted}, "list", false, true},
	} {
		_, _, err := w.PutEndpoint(t.Context(), webhook.PutEndpointParams{
			AccountID: tc.account, URL: "https://hooks.example.org/x", Enabled: true,
			Secret: webhook.NewSecret(), Events: webhook.NormalizeEvents(tc.events), Now: time.Now(),
		})
		if err != nil {
			t.Fatal(err)
		}
		for range 3 {
			job, res := completed(tc.account, "42", "a@example.org")
			job.BatchID = tc.batch
			ev, bev, err := src.NewEvents(t.Context(), job, res)
			if err != nil {
				t.Fatal(err)
			}
			if (ev != nil) != tc.ev || (bev != nil) != tc.batchEv {
				t.Fatalf("%s: events %v, %v; want %v, %v", tc.account, ev != nil, bev != nil, tc.ev, tc.batchEv)
			}
		}
	}
	if asked["list"] != 1 || asked["batch"] != 1 {
		t.Fatalf("asked %v; want each batch once", asked)
	}
}
