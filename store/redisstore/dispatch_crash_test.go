package redisstore_test

import (
	"bytes"
	"context"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/validmail/validmail/store/redisstore"
	"github.com/validmail/validmail/webhook"
)

// Variables the dispatcher crash test passes to its child processes.
const envDispatchPrefix = "VALIDMAIL_DISPATCH_PREFIX"

const dispatchEvents = 300

// TestDispatchChild is the dispatcher process of TestDispatchCrash; it does
// nothing when run on its own. It delivers until the outbox has nothing
// pending.
func TestDispatchChild(t *testing.T) {
	prefix := os.Getenv(envDispatchPrefix)
	if prefix == "" {
		t.Skip("helper process of TestDispatchCrash")
	}
	s, err := redisstore.New(client(t), &redisstore.Config{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	w := s.Webhooks()
	hc, err := webhook.NewClient(webhook.ClientOptions{Allow: []string{"127.0.0.1"}, Timeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	d, err := webhook.NewDispatcher(w, w, hc, &webhook.Config{
		Schedule:       []time.Duration{20 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond},
		Jitter:         -1,
		Timeout:        500 * time.Millisecond,
		LeaseDuration:  1500 * time.Millisecond,
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
	go func() { done <- d.Run(ctx) }()
	for ctx.Err() == nil {
		if n, err := w.Pending(ctx); err == nil && n == 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if ctx.Err() != nil {
		t.Fatal("the outbox was not delivered in time")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// receiver is a slow loopback endpoint that fails the first attempt of
// about one event in four with 503, and records every webhook-id whose
// signature verifies.
type receiver struct {
	secret string

	mu       sync.Mutex
	attempts map[string]int // by webhook-id
	ok       map[string]int // 2xx answers by webhook-id
	bad      int            // requests that did not verify
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	time.Sleep(10 * time.Millisecond)
	id := r.Header.Get("webhook-id")
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if err := webhook.Verify(rc.secret, r.Header, body); err != nil {
		rc.bad++
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	rc.attempts[id]++
	if rc.attempts[id] == 1 && crc32.ChecksumIEEE([]byte(id))%4 == 0 {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	rc.ok[id]++
	w.WriteHeader(http.StatusNoContent)
}

func (rc *receiver) delivered() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.ok)
}

// TestDispatchCrash kills a dispatcher process with SIGKILL while
// deliveries are pending and in flight, lets a second process deliver the
// rest, and checks that every event reached the receiver at least once
// and that every delivery ended delivered.
func TestDispatchCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	t.Parallel()
	ctx := context.Background()
	s, _, prefix := setup(t, nil)
	w := s.Webhooks()
	rc := &receiver{secret: webhook.NewSecret(), attempts: map[string]int{}, ok: map[string]int{}}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	const acct = "acct-dispatch"
	if _, _, err := w.PutEndpoint(ctx, webhook.PutEndpointParams{AccountID: acct, URL: srv.URL + "/hook", Enabled: true, Secret: rc.secret, Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
	ids := make(map[string]bool, dispatchEvents)
	now := time.Now()
	for i := range dispatchEvents {
		ev, err := webhook.NewEvent(acct, fmt.Sprint(i+1), []byte(`{"status":"LIKELY"}`), now)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Enqueue(ctx, ev); err != nil {
			t.Fatal(err)
		}
		ids[ev.ID] = true
	}

	var out bytes.Buffer
	child := func() *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^TestDispatchChild$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), envDispatchPrefix+"="+prefix)
		out.Reset()
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd
	}

	first := child()
	deadline := time.Now().Add(30 * time.Second)
	for rc.delivered() < dispatchEvents/4 {
		if time.Now().After(deadline) {
			first.Process.Kill()
			first.Wait()
			t.Fatalf("the first dispatcher delivered %d events\n%s", rc.delivered(), out.String())
		}
		time.Sleep(2 * time.Millisecond)
	}
	if err := first.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	first.Wait()
	pending, err := w.Pending(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("killed the first dispatcher after %d deliveries, %d pending", rc.delivered(), pending)
	if pending == 0 {
		t.Fatal("the first dispatcher finished before it was killed")
	}

	second := child()
	if err := second.Wait(); err != nil {
		t.Fatalf("second dispatcher: %v\n%s", err, out.String())
	}

	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.bad != 0 {
		t.Errorf("%d requests failed verification", rc.bad)
	}
	dups := 0
	for id := range ids {
		if rc.ok[id] == 0 {
			t.Errorf("event %s never reached the receiver", id)
		}
		dups += rc.ok[id] - 1
	}
	if len(rc.ok) != dispatchEvents {
		t.Errorf("the receiver accepted %d distinct ids, want %d", len(rc.ok), dispatchEvents)
	}
	ds, err := w.Deliveries(ctx, webhook.ListParams{AccountID: acct, Limit: 2 * dispatchEvents})
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != dispatchEvents {
		t.Fatalf("%d deliveries listed, want %d", len(ds), dispatchEvents)
	}
	for _, d := range ds {
		if d.State != webhook.StateDelivered || len(d.Attempts) == 0 {
			t.Fatalf("delivery %s: %s after %d attempts, want delivered", d.ID, d.State, len(d.Attempts))
		}
	}
	t.Logf("all %d events delivered; %d delivered twice (in flight at the kill)", dispatchEvents, dups)
}
