package webhook_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/validmail/validmail/store/memstore"
	"github.com/validmail/validmail/webhook"
)

// fakeClock is a clock the test moves by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

type bundle struct {
	store  *memstore.Webhooks
	clock  *fakeClock
	disp   *webhook.Dispatcher
	secret string
	url    string
	now    func() time.Time // the dispatcher's clock
	stop   func()           // cancels Run and waits for it
}

// setup starts a dispatcher over a memory outbox delivering to handler on
// loopback, with cfg adjusted by tweak.
func setup(t *testing.T, handler http.HandlerFunc, tweak func(*webhook.Config)) *bundle {
	t.Helper()
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	b := &bundle{
		store:  memstore.NewBackend().Outbox.(*memstore.Webhooks),
		clock:  &fakeClock{t: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)},
		secret: webhook.NewSecret(),
		url:    srv.URL + "/hook",
	}
	if _, _, err := b.store.PutEndpoint(t.Context(), webhook.PutEndpointParams{
		AccountID: "acct", URL: b.url, Enabled: true, Secret: b.secret, Now: b.clock.Now(),
	}); err != nil {
		t.Fatal(err)
	}
	client, err := webhook.NewClient(webhook.ClientOptions{Allow: []string{"127.0.0.1/32"}})
	if err != nil {
		t.Fatal(err)
	}
	cfg := &webhook.Config{
		Schedule:     []time.Duration{10 * time.Second, time.Minute, time.Minute, time.Minute},
		Jitter:       -1,
		Timeout:      300 * time.Millisecond,
		PollInterval: 5 * time.Millisecond,
		Now:          b.clock.Now,
	}
	if tweak != nil {
		tweak(cfg)
	}
	b.now = cfg.Now
	if b.now == nil {
		b.now = time.Now
	}
	b.disp, err = webhook.NewDispatcher(b.store, b.store, client, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.disp.Run(ctx) }()
	var once sync.Once
	b.stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run returned %v", err)
			}
		})
	}
	t.Cleanup(b.stop)
	return b
}

func (b *bundle) enqueue(t *testing.T, jobID string) webhook.Event {
	t.Helper()
	ev, err := webhook.NewEvent("acct", jobID, []byte(`{"email":"a@example.org","status":"LIKELY"}`), b.now())
	if err != nil {
		t.Fatal(err)
	}
	if err := b.store.Enqueue(t.Context(), ev); err != nil {
		t.Fatal(err)
	}
	b.disp.Notify()
	return ev
}

func (b *bundle) delivery(t *testing.T, id string) webhook.Delivery {
	t.Helper()
	ds, err := b.store.Deliveries(t.Context(), webhook.ListParams{AccountID: "acct", Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range ds {
		if d.ID == id {
			return d
		}
	}
	t.Fatalf("delivery %s not listed", id)
	return webhook.Delivery{}
}

// waitFor polls the delivery until cond holds, for up to 5 seconds.
func (b *bundle) waitFor(t *testing.T, id string, what string, cond func(webhook.Delivery) bool) webhook.Delivery {
	t.Helper()
	deadline := time.Now().Add(time.Minute) // a condition wait: a loaded machine may be slow
	for {
		d := b.delivery(t, id)
		if cond(d) {
			return d
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: delivery is %+v", what, d)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// rescheduledAfter reports a delivery that has n attempts and waits for
// a later time.
func (b *bundle) rescheduledAfter(n int) func(webhook.Delivery) bool {
	return func(d webhook.Delivery) bool {
		return len(d.Attempts) == n && d.State == webhook.StatePending && d.NextAttempt.After(b.clock.Now())
	}
}

func TestDispatcherRetriesUntilSuccess(t *testing.T) {
	t.Parallel()
	var (
		mu   sync.Mutex
		ids  []string
		errs []error
	)
	var b *bundle
	handler := func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		ids = append(ids, r.Header.Get(webhook.HeaderID))
		n := len(ids)
		errs = append(errs, webhook.VerifyOptions{Now: b.clock.Now}.Verify(b.secret, r.Header, body))
		mu.Unlock()
		switch n {
		case 1:
			w.WriteHeader(http.StatusInternalServerError)
		case 2:
			<-r.Context().Done() // longer than the dispatcher's timeout
		case 3:
			w.Header().Set("Retry-After", "120")
			w.WriteHeader(http.StatusServiceUnavailable)
		default:
			w.WriteHeader(http.StatusNoContent)
		}
	}
	b = setup(t, handler, nil)
	ev := b.enqueue(t, "1")
	t0 := b.clock.Now()

	d := b.waitFor(t, ev.ID, "first retry", b.rescheduledAfter(1))
	if d.Attempts[0].StatusCode != 500 || !d.NextAttempt.Equal(t0.Add(10*time.Second)) {
		t.Fatalf("after 500: attempt %+v next %v, want status 500 and retry at +10s", d.Attempts[0], d.NextAttempt)
	}
	b.clock.Advance(10 * time.Second)
	b.disp.Notify()

	d = b.waitFor(t, ev.ID, "second retry", b.rescheduledAfter(2))
	if a := d.Attempts[1]; a.StatusCode != 0 || a.Error != webhook.ReasonTimeout {
		t.Fatalf("timeout attempt recorded as %+v", a)
	}
	if want := b.clock.Now().Add(time.Minute); !d.NextAttempt.Equal(want) {
		t.Fatalf("after timeout next %v, want %v", d.NextAttempt, want)
	}
	b.clock.Advance(time.Minute)
	b.disp.Notify()

	d = b.waitFor(t, ev.ID, "third retry", b.rescheduledAfter(3))
	if want := b.clock.Now().Add(120 * time.Second); d.Attempts[2].StatusCode != 503 || !d.NextAttempt.Equal(want) {
		t.Fatalf("after 503 Retry-After 120: attempt %+v next %v, want %v", d.Attempts[2], d.NextAttempt, want)
	}
	// Retry-After (120 s) beats the schedule (60 s): nothing before it.
	b.clock.Advance(119 * time.Second)
	b.disp.Notify()
	time.Sleep(50 * time.Millisecond)
	if d := b.delivery(t, ev.ID); len(d.Attempts) != 3 {
		t.Fatalf("attempt before Retry-After elapsed: %d attempts", len(d.Attempts))
	}
	b.clock.Advance(time.Second)
	b.disp.Notify()

	d = b.waitFor(t, ev.ID, "delivery", func(d webhook.Delivery) bool { return d.State == webhook.StateDelivered })
	if len(d.Attempts) != 4 || d.Attempts[3].StatusCode != 204 {
		t.Fatalf("delivered with attempts %+v", d.Attempts)
	}

	// Nothing more after success, however long we wait.
	b.clock.Advance(48 * time.Hour)
	b.disp.Notify()
	time.Sleep(50 * time.Millisecond)
	b.stop()
	mu.Lock()
	defer mu.Unlock()
	if len(ids) != 4 {
		t.Fatalf("receiver got %d requests, want 4", len(ids))
	}
	for i, id := range ids {
		if id != ev.ID {
			t.Errorf("request %d had webhook-id %q, want %q", i+1, id, ev.ID)
		}
		if errs[i] != nil {
			t.Errorf("request %d: signature does not verify: %v", i+1, errs[i])
		}
	}
}

func TestDispatcherGoneDisablesEndpoint(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	b := setup(t, func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.WriteHeader(http.StatusGone)
	}, nil)
	ev := b.enqueue(t, "1")
	d := b.waitFor(t, ev.ID, "dead after 410", func(d webhook.Delivery) bool { return d.State == webhook.StateDead })
	if len(d.Attempts) != 1 || d.Attempts[0].StatusCode != 410 || !strings.Contains(d.Reason, "410") {
		t.Errorf("dead delivery %+v, want one 410 attempt and a reason naming it", d)
	}
	ep, err := b.store.GetEndpoint(t.Context(), "acct")
	if err != nil {
		t.Fatal(err)
	}
	if ep.Enabled || ep.DisabledReason == "" {
		t.Errorf("endpoint after 410: enabled %v reason %q", ep.Enabled, ep.DisabledReason)
	}
	// Later events are not sent to a disabled endpoint.
	ev2 := b.enqueue(t, "2")
	d = b.waitFor(t, ev2.ID, "dead while disabled", func(d webhook.Delivery) bool { return d.State == webhook.StateDead })
	if len(d.Attempts) != 0 || hits.Load() != 1 {
		t.Errorf("event for a disabled endpoint: %d attempts, receiver hits %d", len(d.Attempts), hits.Load())
	}
}

func TestDispatcherDeadAfterLastAttempt(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	b := setup(t, func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.WriteHeader(http.StatusBadGateway)
	}, func(c *webhook.Config) { c.Schedule = []time.Duration{0, 0} })
	ev := b.enqueue(t, "1")
	d := b.waitFor(t, ev.ID, "dead", func(d webhook.Delivery) bool { return d.State == webhook.StateDead })
	if len(d.Attempts) != 3 || d.Reason != "no success after 3 attempts" || !d.NextAttempt.IsZero() {
		t.Errorf("dead delivery: %d attempts, reason %q, next %v", len(d.Attempts), d.Reason, d.NextAttempt)
	}
	time.Sleep(30 * time.Millisecond)
	if n := hits.Load(); n != 3 {
		t.Errorf("receiver got %d requests, want 3", n)
	}
}

func TestDispatcherNoEndpoint(t *testing.T) {
	t.Parallel()
	b := setup(t, func(http.ResponseWriter, *http.Request) {}, nil)
	if err := b.store.DeleteEndpoint(t.Context(), "acct"); err != nil {
		t.Fatal(err)
	}
	ev := b.enqueue(t, "1")
	d := b.waitFor(t, ev.ID, "dead", func(d webhook.Delivery) bool { return d.State == webhook.StateDead })
	if d.Reason != "no webhook endpoint configured" {
		t.Errorf("reason %q", d.Reason)
	}
}

func TestDispatcherBoundsConcurrencyPerEndpoint(t *testing.T) {
	t.Parallel()
	const events, perEndpoint = 40, 3
	var (
		cur, peak atomic.Int32
		mu        sync.Mutex
		seen      = map[string]int{}
	)
	b := setup(t, func(w http.ResponseWriter, r *http.Request) {
		n := cur.Add(1)
		defer cur.Add(-1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(10 * time.Millisecond)
		mu.Lock()
		seen[r.Header.Get(webhook.HeaderID)]++
		mu.Unlock()
	}, func(c *webhook.Config) {
		c.Now = nil // real clock: put-backs of a busy endpoint come due again
		// No attempt may time out (its retry would wait 10 s): this test is
		// about the bound, not timeouts, and a loaded machine is slow.
		c.Timeout = time.Minute
		c.MaxInFlight = 20
		c.MaxPerEndpoint = perEndpoint
		c.BusyDelay = 5 * time.Millisecond
	})
	var evs []webhook.Event
	for i := range events {
		evs = append(evs, b.enqueue(t, string(rune('a'+i))))
	}
	for _, ev := range evs {
		b.waitFor(t, ev.ID, "delivery", func(d webhook.Delivery) bool { return d.State == webhook.StateDelivered })
	}
	b.stop()
	if p := peak.Load(); p > perEndpoint {
		t.Errorf("peak of %d requests in flight to one endpoint, limit %d", p, perEndpoint)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != events {
		t.Errorf("%d distinct events received, want %d", len(seen), events)
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("%s received %d times", id, n)
		}
	}
}

func TestDispatcherGracefulStop(t *testing.T) {
	t.Parallel()
	started := make(chan struct{})
	b := setup(t, func(w http.ResponseWriter, r *http.Request) {
		close(started)
		time.Sleep(100 * time.Millisecond)
	}, func(c *webhook.Config) { c.Timeout = 5 * time.Second })
	ev := b.enqueue(t, "1")
	<-started
	b.stop() // returns only once the request in flight is recorded
	if d := b.delivery(t, ev.ID); d.State != webhook.StateDelivered {
		t.Errorf("after stop the delivery is %q, want delivered", d.State)
	}
}

func TestDispatcherSendSignsWithEverySecret(t *testing.T) {
	t.Parallel()
	got := make(chan http.Header, 1)
	var body []byte
	b := setup(t, func(w http.ResponseWriter, r *http.Request) {
		body, _ = io.ReadAll(r.Body)
		got <- r.Header.Clone()
	}, nil)
	oldSecret := b.secret
	ep, err := b.store.RotateSecret(t.Context(), webhook.RotateSecretParams{
		AccountID: "acct", Secret: webhook.NewSecret(), Now: b.clock.Now(),
		PreviousExpiresAt: b.clock.Now().Add(webhook.RotationGrace),
	})
	if err != nil {
		t.Fatal(err)
	}
	a := b.disp.Send(t.Context(), ep, webhook.NewTestEvent("acct", b.clock.Now()))
	if a.StatusCode != 200 || a.Error != "" {
		t.Fatalf("Send = %+v", a)
	}
	h := <-got
	opts := webhook.VerifyOptions{Now: b.clock.Now}
	for _, s := range []string{oldSecret, ep.Secret} {
		if err := opts.Verify(s, h, body); err != nil {
			t.Errorf("during rotation a receiver with one secret fails: %v", err)
		}
	}
	if h.Get("Content-Type") != "application/json" {
		t.Errorf("Content-Type %q", h.Get("Content-Type"))
	}
}

func TestDispatcherRefusesPrivateWithoutAllowlist(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	defer srv.Close()
	store := memstore.NewBackend().Outbox.(*memstore.Webhooks)
	disp, err := webhook.NewDispatcher(store, store, nil, nil) // default client: public only
	if err != nil {
		t.Fatal(err)
	}
	a := disp.Send(t.Context(), webhook.Endpoint{URL: srv.URL, Secret: webhook.NewSecret(), Enabled: true}, webhook.NewTestEvent("acct", time.Now()))
	if a.StatusCode != 0 || a.Error != webhook.ReasonBlockedAddress || hits.Load() != 0 {
		t.Errorf("Send to loopback = %+v (hits %d), want refusal", a, hits.Load())
	}
}

func TestNewDispatcherRejectsBadConfig(t *testing.T) {
	t.Parallel()
	s := memstore.NewBackend().Outbox.(*memstore.Webhooks)
	for name, cfg := range map[string]*webhook.Config{
		"negative delay": {Schedule: []time.Duration{-time.Second}},
		"jitter 1":       {Jitter: 1},
		"short lease":    {Timeout: time.Minute, LeaseDuration: time.Minute},
	} {
		if _, err := webhook.NewDispatcher(s, s, nil, cfg); err == nil {
			t.Errorf("%s: NewDispatcher accepted %+v", name, cfg)
		}
	}
	if _, err := webhook.NewDispatcher(nil, s, nil, nil); err == nil {
		t.Error("NewDispatcher accepted a nil outbox")
	}
}
