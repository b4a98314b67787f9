package webhooktest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/validmail/validmail/store/crashtest"
	"github.com/validmail/validmail/webhook"
)

// EnvCrashNamespace holds the namespace a child process of [RunCrash]
// delivers from; a test process without it is not a crash child.
const EnvCrashNamespace = "VALIDMAIL_DISPATCH_CRASH_NAMESPACE"

// Shape of the dispatcher crash test.
const (
	crashEvents  = 300
	crashAccount = "acct-dispatch-crash"
	// crashLease is the child dispatchers' lease: deliveries leased by
	// the killed process are handed out again this long after.
	crashLease = 1500 * time.Millisecond
)

// RunCrash checks that deliveries survive the death of a dispatcher
// process. It registers a loopback endpoint (a receiver in the test
// process that verifies every signature with [webhook.Verify], answers
// slowly and fails the first attempt at every fifth event), enqueues 300
// events for it, starts a child process (the test binary, running
// d.ChildTest) whose [webhook.Dispatcher] delivers them, kills it with
// SIGKILL while deliveries are pending and in flight, and starts a
// second child that delivers the rest. It then checks that every event
// was accepted by the receiver at least once, that no request failed
// verification, and that every delivery ended delivered by its last
// attempt.
//
// RunCrash is skipped under -short and inside a child process.
func RunCrash(t *testing.T, d crashtest.Durable[Backend]) {
	ns, be := crashtest.Begin(t, d, EnvCrashNamespace)
	ob, eps := be.Outbox, be.Endpoints
	ctx := context.Background()

	rc := &crashReceiver{secret: webhook.NewSecret(), attempts: map[string]int{}, ok: map[string]int{}}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	now := time.Now()
	if _, _, err := eps.PutEndpoint(ctx, webhook.PutEndpointParams{
		AccountID: crashAccount, URL: srv.URL + "/hook", Enabled: true, Secret: rc.secret, Now: now,
	}); err != nil {
		t.Fatal(err)
	}
	for i := range crashEvents {
		ev := webhook.Event{
			ID:        crashEventID(i),
			AccountID: crashAccount,
			Type:      webhook.TypeValidationCompleted,
			JobID:     fmt.Sprint(i + 1),
			CreatedAt: now,
			Payload:   fmt.Appendf(nil, `{"type":"validation.completed","data":{"job_id":"%d"}}`, i+1),
		}
		if err := ob.Enqueue(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}

	c := crashtest.Start(t, d.ChildTest, EnvCrashNamespace+"="+ns)
	deadline := time.Now().Add(30 * time.Second)
	for rc.accepted() < crashEvents/4 {
		if time.Now().After(deadline) {
			c.Kill()
			t.Fatalf("the first dispatcher delivered %d events in 30s\n%s", rc.accepted(), c.Output())
		}
		time.Sleep(2 * time.Millisecond)
	}
	c.Kill()
	pending, err := ob.Pending(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("killed the first dispatcher (SIGKILL) after %d deliveries, %d pending", rc.accepted(), pending)
	if pending == 0 {
		t.Fatal("the first dispatcher finished before it was killed")
	}

	c = crashtest.Start(t, d.ChildTest, EnvCrashNamespace+"="+ns)
	if err := c.Wait(90 * time.Second); err != nil {
		t.Fatalf("second dispatcher: %v\n%s", err, c.Output())
	}

	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.bad) > 0 {
		t.Errorf("%d requests failed verification, first: %s", len(rc.bad), rc.bad[0])
	}
	requests, dups := 0, 0
	for i := range crashEvents {
		id := crashEventID(i)
		if rc.ok[id] == 0 {
			t.Errorf("event %s was never accepted by the receiver", id)
		}
		dups += max(rc.ok[id]-1, 0)
		requests += rc.attempts[id]
	}
	if len(rc.ok) != crashEvents || len(rc.attempts) != crashEvents {
		t.Errorf("the receiver accepted %d and saw %d distinct ids, want %d", len(rc.ok), len(rc.attempts), crashEvents)
	}
	ds, err := ob.Deliveries(ctx, webhook.ListParams{AccountID: crashAccount, Limit: 2 * crashEvents})
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != crashEvents {
		t.Fatalf("%d deliveries listed, want %d", len(ds), crashEvents)
	}
	for _, d := range ds {
		if d.State != webhook.StateDelivered || len(d.Attempts) == 0 || d.Attempts[len(d.Attempts)-1].StatusCode != http.StatusNoContent {
			t.Errorf("delivery %s: %s after %d attempts, want delivered by its last attempt", d.ID, d.State, len(d.Attempts))
		}
	}
	t.Logf("all %d events delivered in %d requests; %d accepted twice (in flight at the kill)", crashEvents, requests, dups)
}

// CrashChild is the dispatcher process of [RunCrash]: the test named by
// d.ChildTest calls it. It runs a [webhook.Dispatcher], with a client
// allowed to reach 127.0.0.1, over the namespace given by the parent
// until nothing is pending. Without [EnvCrashNamespace] (a test run of
// its own) it skips.
func CrashChild(t *testing.T, d crashtest.Durable[Backend]) {
	_, be := crashtest.InChild(t, d, EnvCrashNamespace)
	ob, eps := be.Outbox, be.Endpoints
	hc, err := webhook.NewClient(webhook.ClientOptions{Allow: []string{"127.0.0.1"}, Timeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	disp, err := webhook.NewDispatcher(ob, eps, hc, &webhook.Config{
		Schedule:       []time.Duration{20 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond},
		Jitter:         -1,
		Timeout:        500 * time.Millisecond,
		LeaseDuration:  crashLease,
		MaxInFlight:    16,
		MaxPerEndpoint: 4,
		BusyDelay:      20 * time.Millisecond,
		PollInterval:   20 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- disp.Run(ctx) }()
	for ctx.Err() == nil {
		if n, err := ob.Pending(ctx); err == nil && n == 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if ctx.Err() != nil {
		t.Fatal("the outbox was not delivered in 60s")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func crashEventID(i int) string { return fmt.Sprintf("msg_crash_%04d", i) }

// crashReceiver is the loopback endpoint of [RunCrash]. It verifies
// every signature, answers slowly, and fails the first attempt at every
// fifth event with 503, so that deliveries are in flight and waiting for
// a retry when the dispatcher is killed.
type crashReceiver struct {
	secret string

	mu       sync.Mutex
	attempts map[string]int // verified requests by webhook-id
	ok       map[string]int // 2xx answers by webhook-id
	bad      []string       // requests that did not verify
}

func (rc *crashReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	id := r.Header.Get("webhook-id")
	if err == nil {
		err = webhook.Verify(rc.secret, r.Header, body)
	}
	if err != nil {
		rc.mu.Lock()
		rc.bad = append(rc.bad, fmt.Sprintf("%s: %v", id, err))
		rc.mu.Unlock()
		http.Error(w, "bad signature", http.StatusBadRequest)
		return
	}
	select {
	case <-time.After(10 * time.Millisecond):
	case <-r.Context().Done():
		return
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.attempts[id]++
	var n int
	if _, err := fmt.Sscanf(id, "msg_crash_%d", &n); err == nil && rc.attempts[id] == 1 && n%5 == 0 {
		http.Error(w, "try again", http.StatusServiceUnavailable)
		return
	}
	rc.ok[id]++
	w.WriteHeader(http.StatusNoContent)
}

// accepted returns the number of distinct events answered with 2xx.
func (rc *crashReceiver) accepted() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.ok)
}
