package pgstore_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/validmail/validmail/store/pgstore"
	"github.com/validmail/validmail/webhook"
)

// envDispatchSchema gives the dispatcher crash test's child process its
// schema.
const envDispatchSchema = "VALIDMAIL_DISPATCH_CRASH_SCHEMA"

const (
	dispatchEvents  = 300
	dispatchAccount = "acct-dispatch-crash"
	// dispatchLease is the child dispatchers' lease: deliveries leased by
	// the killed process are handed out again this long after.
	dispatchLease = 2500 * time.Millisecond
)

// TestDispatchCrashChild is the dispatcher process of
// TestDispatchCrashRecovery: it delivers the schema's outbox to the
// loopback receiver until nothing is pending.
func TestDispatchCrashChild(t *testing.T) {
	schema := os.Getenv(envDispatchSchema)
	if schema == "" {
		t.Skip("runs only as a child of TestDispatchCrashRecovery")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := pgstore.New(ctx, testPool(t), &pgstore.Config{Schema: schema, SkipMigrate: true})
	if err != nil {
		t.Fatal(err)
	}
	w := s.Webhooks()
	client, err := webhook.NewClient(webhook.ClientOptions{Allow: []string{"127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	d, err := webhook.NewDispatcher(w, w, client, &webhook.Config{
		Schedule:       []time.Duration{20 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond},
		Timeout:        time.Second,
		LeaseDuration:  dispatchLease,
		MaxInFlight:    16,
		MaxPerEndpoint: 4,
		BusyDelay:      20 * time.Millisecond,
		PollInterval:   20 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	for {
		n, err := w.Pending(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// receiver is the loopback endpoint of TestDispatchCrashRecovery. It
// verifies every signature, answers slowly, and fails the first attempt
// at every fifth event, so that deliveries are in flight and waiting for
// a retry when the dispatcher is killed.
type receiver struct {
	secret string

	mu       sync.Mutex
	requests int
	seen     map[string]int // webhook-id → requests
	bad      []string
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	id := r.Header.Get("webhook-id")
	if err == nil {
		err = webhook.Verify(rc.secret, r.Header, body)
	}
	rc.mu.Lock()
	rc.requests++
	if err != nil {
		rc.bad = append(rc.bad, fmt.Sprintf("%s: %v", id, err))
	}
	rc.seen[id]++
	first := rc.seen[id] == 1
	rc.mu.Unlock()
	select {
	case <-time.After(15 * time.Millisecond):
	case <-r.Context().Done():
		return
	}
	var n int
	if _, err := fmt.Sscanf(id, "msg_crash_%d", &n); err == nil && first && n%5 == 0 {
		http.Error(w, "try again", http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// received returns the number of distinct events and of requests seen.
func (rc *receiver) received() (events, requests int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.seen), rc.requests
}

// TestDispatchCrashRecovery kills a dispatcher process with SIGKILL while
// deliveries are pending and in flight, lets a new one deliver the rest,
// and checks that every event reached the receiver at least once and
// that every delivery ends delivered.
func TestDispatchCrashRecovery(t *testing.T) {
	if os.Getenv(envDispatchSchema) != "" {
		t.Skip("in a child process")
	}
	if testing.Short() {
		t.Skip("starts processes")
	}
	t.Parallel()
	pool := testPool(t)
	schema := testSchema(t, pool)
	ctx := context.Background()
	s, err := pgstore.New(ctx, pool, &pgstore.Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	w := s.Webhooks()

	rc := &receiver{secret: webhook.NewSecret(), seen: map[string]int{}}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	now := time.Now()
	if _, _, err := w.PutEndpoint(ctx, webhook.PutEndpointParams{
		AccountID: dispatchAccount, URL: srv.URL + "/hook", Enabled: true, Secret: rc.secret, Now: now,
	}); err != nil {
		t.Fatal(err)
	}
	for i := range dispatchEvents {
		ev := webhook.Event{
			ID:        fmt.Sprintf("msg_crash_%04d", i),
			AccountID: dispatchAccount,
			Type:      webhook.TypeValidationCompleted,
			JobID:     fmt.Sprint(i + 1),
			CreatedAt: now,
			Payload:   fmt.Appendf(nil, `{"type":"validation.completed","data":{"job_id":"%d"}}`, i+1),
		}
		if err := w.Enqueue(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}

	child := func() *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^TestDispatchCrashChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), envDispatchSchema+"="+schema)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd
	}

	first := child()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if n, _ := rc.received(); n >= dispatchEvents/3 {
			break
		}
		if time.Now().After(deadline) {
			_ = first.Process.Kill()
			_ = first.Wait()
			t.Fatal("the first dispatcher reached too few events in 30s")
		}
		time.Sleep(2 * time.Millisecond)
	}
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = first.Wait()
	pending, err := w.Pending(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var leased int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM "`+schema+`".webhook_deliveries
		WHERE state = 'pending' AND lease_token IS NOT NULL`).Scan(&leased); err != nil {
		t.Fatal(err)
	}
	seenAtKill, _ := rc.received()
	t.Logf("killed the first dispatcher with %d events received, %d pending, %d of them leased", seenAtKill, pending, leased)
	if pending == 0 {
		t.Fatal("the first dispatcher finished before it was killed")
	}

	second := child()
	waitErr := make(chan error, 1)
	go func() { waitErr <- second.Wait() }()
	select {
	case err := <-waitErr:
		if err != nil {
			t.Fatalf("second dispatcher process: %v", err)
		}
	case <-time.After(60 * time.Second):
		_ = second.Process.Kill()
		t.Fatal("the second dispatcher process did not finish in 60s")
	}

	events, requests := rc.received()
	t.Logf("%d requests for %d events (%d redelivered or retried)", requests, events, requests-events)
	rc.mu.Lock()
	bad := rc.bad
	rc.mu.Unlock()
	if len(bad) > 0 {
		t.Errorf("%d requests failed verification, first: %s", len(bad), bad[0])
	}
	for i := range dispatchEvents {
		id := fmt.Sprintf("msg_crash_%04d", i)
		rc.mu.Lock()
		n := rc.seen[id]
		rc.mu.Unlock()
		if n == 0 {
			t.Errorf("event %s never reached the receiver", id)
		}
	}
	if events != dispatchEvents {
		t.Errorf("%d distinct webhook-ids received, want %d", events, dispatchEvents)
	}
	ds, err := w.Deliveries(ctx, webhook.ListParams{AccountID: dispatchAccount, Limit: 2 * dispatchEvents})
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != dispatchEvents {
		t.Fatalf("%d deliveries listed, want %d", len(ds), dispatchEvents)
	}
	for _, d := range ds {
		if d.State != webhook.StateDelivered || len(d.Attempts) == 0 || d.Attempts[len(d.Attempts)-1].StatusCode != http.StatusNoContent {
			t.Errorf("delivery %s: %s after %d attempts, want delivered by its last attempt", d.ID, d.State, len(d.Attempts))
		}
	}
}
