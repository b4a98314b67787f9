package jobevents_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/jobs"
	"github.com/validmail/validmail/store/memstore"
	"github.com/validmail/validmail/webhook"
	"github.com/validmail/validmail/webhook/jobevents"
)

type validatorFunc func(ctx context.Context, email string) (emailcheck.Result, error)

func (f validatorFunc) Validate(ctx context.Context, email string, _ ...emailcheck.CallOption) (emailcheck.Result, error) {
	return f(ctx, email)
}

// received is what the receiver saw of one event.
type received struct {
	webhookID string
	email     string
}

// receiver verifies each request's signature and records it by job id.
type receiver struct {
	t      *testing.T
	secret string
	mu     sync.Mutex
	byJob  map[string][]received
	total  int
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if err := webhook.Verify(rc.secret, r.Header, body); err != nil {
		rc.t.Errorf("signature: %v", err)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var ev struct {
		Type string
		Data struct {
			JobID  string `json:"job_id"`
			Result emailcheck.Result
		}
	}
	if err := json.Unmarshal(body, &ev); err != nil || ev.Type != webhook.TypeValidationCompleted {
		rc.t.Errorf("event %s: %v", body, err)
	}
	rc.mu.Lock()
	rc.byJob[ev.Data.JobID] = append(rc.byJob[ev.Data.JobID], received{r.Header.Get("webhook-id"), ev.Data.Result.Email})
	rc.total++
	rc.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (rc *receiver) count() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.total
}

// TestCompletedJobsAreDelivered runs the whole path on one memory store:
// a worker pool completes jobs, writing their events with the
// completion; a dispatcher delivers them, signed, to a receiver on
// loopback. Accounts without an enabled endpoint get no outbox entries.
func TestCompletedJobsAreDelivered(t *testing.T) {
	t.Parallel()
	const n = 200
	ctx := t.Context()
	s := memstore.New()
	w := s.Backend().Outbox.(*memstore.Webhooks)

	rc := &receiver{t: t, secret: webhook.NewSecret(), byJob: map[string][]received{}}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	for _, p := range []webhook.PutEndpointParams{
		// The receiver takes validation.completed events only.
		{AccountID: "with-hook", URL: srv.URL + "/hook", Enabled: true, Secret: rc.secret,
			Events: []string{webhook.TypeValidationCompleted}},
		{AccountID: "disabled-hook", URL: srv.URL + "/off", Enabled: false, Secret: webhook.NewSecret()},
	} {
		p.Now = time.Now()
		if _, _, err := w.PutEndpoint(ctx, p); err != nil {
			t.Fatal(err)
		}
	}

	queue, err := jobs.NewQueue(s.Backend().Jobs, credits.New(s, nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	emails := map[string][]string{}
	ids := map[string][]string{}
	for account, count := range map[string]int{"with-hook": n, "disabled-hook": 20, "no-hook": 20} {
		for i := range count {
			emails[account] = append(emails[account], fmt.Sprintf("user%d@%s.example.org", i, account))
		}
		if ids[account], err = queue.Enqueue(ctx, account, emails[account]); err != nil {
			t.Fatal(err)
		}
	}

	client, err := webhook.NewClient(webhook.ClientOptions{Allow: []string{"127.0.0.1/32"}})
	if err != nil {
		t.Fatal(err)
	}
	disp, err := webhook.NewDispatcher(w, w, client, &webhook.Config{
		Schedule: []time.Duration{10 * time.Millisecond, 10 * time.Millisecond},
		Timeout:  2 * time.Second,
		// One endpoint receives every event: deliveries beyond its
		// in-flight bound wait for a slot, at most BusyDelay.
		BusyDelay:    10 * time.Millisecond,
		PollInterval: 20 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	events, err := jobevents.New(w, &jobevents.Config{Dispatcher: disp})
	if err != nil {
		t.Fatal(err)
	}
	likely := validatorFunc(func(_ context.Context, email string) (emailcheck.Result, error) {
		r := emailcheck.Result{Email: email}
		r.Confidence.Status = emailcheck.StatusLikely
		r.Confidence.Score = 90
		return r, nil
	})
	pcfg := jobs.PoolConfig{Workers: 4, PollInterval: 10 * time.Millisecond}
	events.Attach(&pcfg)
	pool, err := jobs.NewPool(queue, likely, &pcfg)
	if err != nil {
		t.Fatal(err)
	}

	runCtx, stop := context.WithCancel(ctx)
	var running sync.WaitGroup
	running.Go(func() { _ = pool.Run(runCtx) })
	running.Go(func() { _ = disp.Run(runCtx) })
	start := time.Now()
	deadline := time.Now().Add(20 * time.Second)
	for (rc.count() < n || pool.Completed() < n+40) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("completed %d, delivered %d in %v", pool.Completed(), rc.count(), time.Since(start))
	time.Sleep(50 * time.Millisecond) // let any duplicate arrive
	stop()
	running.Wait()

	if got := pool.Completed(); got != n+40 {
		t.Fatalf("%d jobs completed, want %d", got, n+40)
	}
	ds, err := w.Deliveries(ctx, webhook.ListParams{AccountID: "with-hook", Limit: 2 * n})
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != n {
		t.Fatalf("%d outbox entries for the account with a webhook, want %d", len(ds), n)
	}
	eventOf := map[string]string{} // job id → event id
	for _, d := range ds {
		if d.State != webhook.StateDelivered || len(d.Attempts) != 1 || d.Attempts[0].StatusCode != http.StatusNoContent {
			t.Errorf("delivery of job %s: state %s, attempts %+v", d.JobID, d.State, d.Attempts)
		}
		eventOf[d.JobID] = d.ID
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.total != n {
		t.Errorf("receiver got %d requests, want %d", rc.total, n)
	}
	for i, id := range ids["with-hook"] {
		got := rc.byJob[id]
		switch {
		case len(got) != 1:
			t.Errorf("job %s delivered %d times, want once", id, len(got))
		case got[0].email != emails["with-hook"][i]:
			t.Errorf("job %s carried the result of %q, want %q", id, got[0].email, emails["with-hook"][i])
		case got[0].webhookID != eventOf[id] || eventOf[id] == "":
			t.Errorf("job %s arrived as webhook-id %q, outbox has %q", id, got[0].webhookID, eventOf[id])
		}
	}
	for _, account := range []string{"disabled-hook", "no-hook"} {
		ds, err := w.Deliveries(ctx, webhook.ListParams{AccountID: account})
		if err != nil || len(ds) != 0 {
			t.Errorf("%s: %d outbox entries (%v), want none", account, len(ds), err)
		}
	}
	if p, err := w.Pending(ctx); err != nil || p != 0 {
		t.Errorf("Pending = %d, %v; want 0", p, err)
	}
}
