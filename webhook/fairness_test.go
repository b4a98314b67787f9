package webhook_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/validmail/validmail/store/memstore"
	"github.com/validmail/validmail/webhook"
)

// Ten accounts whose endpoints never answer do not delay an eleventh's:
// its events arrive within a second of being written, throughout.
func TestStalledEndpointsDoNotDelayOthers(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	store := memstore.NewBackend().Outbox.(*memstore.Webhooks)
	stall := make(chan struct{})
	for i := range 10 {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-stall:
			case <-r.Context().Done():
			}
		}))
		defer srv.Close()
		acct := fmt.Sprintf("stalled-%d", i)
		if _, _, err := store.PutEndpoint(ctx, webhook.PutEndpointParams{AccountID: acct, URL: srv.URL, Enabled: true, Secret: webhook.NewSecret(), Now: time.Now()}); err != nil {
			t.Fatal(err)
		}
		for j := range 30 {
			ev, _ := webhook.NewEvent(acct, fmt.Sprint(j), []byte(`{}`), time.Now())
			if err := store.Enqueue(ctx, ev); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Runs before the servers close: their handlers must return first.
	defer close(stall)
	var mu sync.Mutex
	arrived := map[string]time.Time{}
	healthy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		arrived[r.Header.Get(webhook.HeaderID)] = time.Now()
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer healthy.Close()
	if _, _, err := store.PutEndpoint(ctx, webhook.PutEndpointParams{AccountID: "healthy", URL: healthy.URL, Enabled: true, Secret: webhook.NewSecret(), Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
	client, err := webhook.NewClient(webhook.ClientOptions{Allow: []string{"127.0.0.1/32"}, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	disp, err := webhook.NewDispatcher(store, store, client, &webhook.Config{Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- disp.Run(runCtx) }()
	defer func() { stop(); <-done }()

	// One healthy event every 250 ms for 6 s: through the stalled
	// endpoints' first timeouts and their breakers opening.
	written := map[string]time.Time{}
	for j := range 24 {
		ev, _ := webhook.NewEvent("healthy", fmt.Sprint(j), []byte(`{}`), time.Now())
		if err := store.Enqueue(ctx, ev); err != nil {
			t.Fatal(err)
		}
		written[ev.ID] = time.Now()
		disp.Notify()
		time.Sleep(250 * time.Millisecond)
	}
	time.Sleep(time.Second)
	mu.Lock()
	defer mu.Unlock()
	var worst time.Duration
	for id, at := range written {
		got, ok := arrived[id]
		if !ok {
			t.Errorf("healthy event %s never arrived", id)
			continue
		}
		worst = max(worst, got.Sub(at))
	}
	t.Logf("10 stalled endpoints: the healthy endpoint's %d events arrived at most %v after they were written", len(written), worst.Round(time.Millisecond))
	// Waiting behind a stalled endpoint costs its whole timeout (2 s): a
	// healthy event that took that long was queued behind one.
	if worst >= 2*time.Second {
		t.Errorf("a healthy event took %v, as long as a stalled endpoint's timeout", worst)
	}
}
