package webhook_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/validmail/validmail/store/memstore"
	"github.com/validmail/validmail/webhook"
)

// TestDispatcherBurstToOneEndpoint enqueues a burst of events for one
// account and checks that a dispatcher with the default configuration
// delivers all of them, each once and signed, without exceeding the
// per-endpoint bound: with an instant receiver and with one that takes
// 5 ms per request (1,000 × 5 ms over 8 connections is 625 ms at best; the
// time taken is logged, and measured by the package's benchmarks, not
// asserted, since a loaded machine stretches it).
func TestDispatcherBurstToOneEndpoint(t *testing.T) {
	t.Parallel()
	for _, pause := range []time.Duration{0, 5 * time.Millisecond} {
		t.Run(pause.String(), func(t *testing.T) {
			t.Parallel()
			testBurst(t, 1000, pause)
		})
	}
}

func testBurst(t *testing.T, events int, pause time.Duration) {
	secret := webhook.NewSecret()
	var (
		cur, peak atomic.Int32
		mu        sync.Mutex
		seen      = map[string]int{}
		all       = make(chan struct{})
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := cur.Add(1)
		defer cur.Add(-1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		time.Sleep(pause)
		body, _ := io.ReadAll(r.Body)
		if err := webhook.Verify(secret, r.Header, body); err != nil {
			t.Errorf("signature: %v", err)
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		mu.Lock()
		seen[r.Header.Get(webhook.HeaderID)]++
		if len(seen) == events {
			close(all)
		}
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()

	ctx := t.Context()
	store := memstore.NewBackend().Outbox.(*memstore.Webhooks)
	if _, _, err := store.PutEndpoint(ctx, webhook.PutEndpointParams{
		AccountID: "acct", URL: srv.URL, Enabled: true, Secret: secret, Now: time.Now(),
	}); err != nil {
		t.Fatal(err)
	}
	for i := range events {
		ev, err := webhook.NewEvent("acct", fmt.Sprint(i+1), []byte(`{"status":"LIKELY"}`), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if err := store.Enqueue(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	client, err := webhook.NewClient(webhook.ClientOptions{Allow: []string{"127.0.0.1/32"}})
	if err != nil {
		t.Fatal(err)
	}
	disp, err := webhook.NewDispatcher(store, store, client, nil)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- disp.Run(runCtx) }()
	select {
	case <-all:
	case <-time.After(2 * time.Minute):
	}
	elapsed := time.Since(start)
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	t.Logf("%d of %d events delivered in %v, peak %d in flight", len(seen), events, elapsed.Round(time.Millisecond), peak.Load())
	if len(seen) != events {
		t.Fatalf("%d distinct events delivered within 2 minutes, want %d", len(seen), events)
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("%s received %d times", id, n)
		}
	}
	if p := peak.Load(); p > 8 {
		t.Errorf("peak of %d requests in flight to one endpoint, default limit 8", p)
	}
	if n, err := store.Pending(ctx); err != nil || n != 0 {
		t.Errorf("Pending = %d, %v; want 0", n, err)
	}
}

// TestDispatcherSlowEndpointDoesNotStarveOthers fills the outbox with
// events for an endpoint that takes 100 ms per request, then adds one
// for another account: it is delivered long before the slow backlog
// drains.
func TestDispatcherSlowEndpointDoesNotStarveOthers(t *testing.T) {
	t.Parallel()
	var slowDelivered atomic.Int32
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(100 * time.Millisecond)
		slowDelivered.Add(1)
	}))
	defer slow.Close()
	fastDone := make(chan time.Time, 1)
	fast := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fastDone <- time.Now()
	}))
	defer fast.Close()

	ctx := t.Context()
	store := memstore.NewBackend().Outbox.(*memstore.Webhooks)
	for acct, url := range map[string]string{"slow": slow.URL, "fast": fast.URL} {
		if _, _, err := store.PutEndpoint(ctx, webhook.PutEndpointParams{
			AccountID: acct, URL: url, Enabled: true, Secret: webhook.NewSecret(), Now: time.Now(),
		}); err != nil {
			t.Fatal(err)
		}
	}
	enqueue := func(acct, job string) {
		ev, err := webhook.NewEvent(acct, job, []byte(`{}`), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if err := store.Enqueue(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 200 { // 200 × 100 ms over 2 connections: 10 s
		enqueue("slow", fmt.Sprint(i))
	}
	client, err := webhook.NewClient(webhook.ClientOptions{Allow: []string{"127.0.0.1/32"}})
	if err != nil {
		t.Fatal(err)
	}
	disp, err := webhook.NewDispatcher(store, store, client, &webhook.Config{
		MaxInFlight: 16, MaxPerEndpoint: 2, BusyDelay: 50 * time.Millisecond, PollInterval: 10 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- disp.Run(runCtx) }()
	defer func() { stop(); <-done }()

	time.Sleep(300 * time.Millisecond) // the slow backlog has the dispatcher's attention
	start := time.Now()
	enqueue("fast", "x")
	disp.Notify()
	// The measure is the slow backlog, not the clock: the other account's
	// event must arrive while most of the backlog is still waiting.
	select {
	case at := <-fastDone:
		n := slowDelivered.Load()
		t.Logf("the other account's event arrived after %v, with %d of the slow account's 200 delivered", at.Sub(start).Round(time.Millisecond), n)
		if n >= 100 {
			t.Errorf("the other account waited behind %d of the slow account's 200 deliveries", n)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("the other account's event did not arrive within 2 minutes")
	}
}
