package httpapi_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/validmail/validmail/webhook"
)

// TestWebhookBatchEndToEnd submits a batch of 1,000 addresses through the
// API; the worker pool completes the jobs, writing one event each in the
// same step; the dispatcher (default configuration, loopback allowed)
// delivers them. The receiver gets 1,000 events, each signed, each once,
// each carrying its job's id and result, and one batch.completed event.
//
// It does not run in parallel with other tests: it measures a time, and
// its load would slow the timing-sensitive tests beside it.
func TestWebhookBatchEndToEnd(t *testing.T) {
	const n = 1000
	f := setup(t, &options{webhooks: true, loopback: true, credits: 2 * n})
	rc := newReceiver(t)
	secret := f.putHook(t, f.key, rc.srv.URL+"/events")

	var (
		mu       sync.Mutex
		last     time.Time
		bad      []string
		received = make(chan struct{}, n+1)
	)
	rc.mu.Lock()
	rc.each = func(ev hookEvent) {
		mu.Lock()
		defer mu.Unlock()
		if err := webhook.Verify(secret, ev.Header, ev.Body); err != nil {
			bad = append(bad, ev.ID+": "+err.Error())
		}
		last = time.Now()
		select {
		case received <- struct{}{}:
		default: // a duplicate: counted below
		}
	}
	rc.mu.Unlock()
	f.runPool(t)
	f.runDispatcher(t)

	emails := make([]string, n)
	for i := range emails {
		domain := "good.com"
		if i%10 == 9 {
			domain = "other.com"
		}
		emails[i] = fmt.Sprintf("user%d@%s", i, domain)
	}
	body, _ := json.Marshal(map[string]any{"emails": emails})
	start := time.Now()
	resp := f.do(t, req{method: "POST", target: "/validate/async", key: f.key, body: string(body)})
	if resp.Code != 202 {
		t.Fatalf("submit: %d %s", resp.Code, resp.Body)
	}
	var ids []string
	for _, id := range resp.JSON(t)["job_ids"].([]any) {
		ids = append(ids, id.(string))
	}
	timeout := time.After(30 * time.Second)
	for i := range n + 1 {
		select {
		case <-received:
		case <-timeout:
			t.Fatalf("%d of %d events received within 30 s", i, n+1)
		}
	}
	mu.Lock()
	elapsed := last.Sub(start)
	mu.Unlock()
	t.Logf("%d events delivered %v after the submission", n, elapsed.Round(time.Millisecond))
	time.Sleep(50 * time.Millisecond) // let a duplicate show up

	mu.Lock()
	if len(bad) > 0 {
		t.Errorf("%d events failed verification, first: %s", len(bad), bad[0])
	}
	mu.Unlock()
	var got, batchEvents []hookEvent
	for _, ev := range rc.events() {
		if ev.Type == webhook.TypeBatchCompleted {
			batchEvents = append(batchEvents, ev)
		} else {
			got = append(got, ev)
		}
	}
	if len(got) != n || len(batchEvents) != 1 {
		t.Fatalf("receiver got %d job events and %d batch events, want %d and 1", len(got), len(batchEvents), n)
	}
	wantData := `"data":{"batch_id":"` + ids[0] + `","total":1000,"counts":{"LIKELY":1000}}}`
	if b := string(batchEvents[0].Body); !strings.HasPrefix(b, `{"type":"batch.completed","timestamp":"`) || !strings.HasSuffix(b, wantData) {
		t.Errorf("batch event %s, want it to end with %s", b, wantData)
	}
	byJob := make(map[string]hookEvent, n)
	eventIDs := make(map[string]bool, n)
	for _, ev := range got {
		if _, dup := byJob[ev.JobID]; dup {
			t.Errorf("job %s delivered twice", ev.JobID)
		}
		byJob[ev.JobID] = ev
		eventIDs[ev.ID] = true
	}
	if len(eventIDs) != n {
		t.Errorf("%d distinct webhook-ids, want %d", len(eventIDs), n)
	}
	for i, id := range ids {
		ev, ok := byJob[id]
		switch {
		case !ok:
			t.Errorf("job %s not delivered", id)
		case ev.Type != webhook.TypeValidationCompleted:
			t.Errorf("job %s: type %q", id, ev.Type)
		case ev.Result.Email != emails[i] || string(ev.Result.Confidence.Status) != "LIKELY":
			t.Errorf("job %s carried %s/%s, want %s/LIKELY", id, ev.Result.Email, ev.Result.Confidence.Status, emails[i])
		case ev.Result.Meta.Source != "api_async":
			t.Errorf("job %s: meta.source %q", id, ev.Result.Meta.Source)
		}
	}
	// The event matches what polling answers.
	st := f.do(t, req{method: "GET", target: "/validate/status/" + ids[0], key: f.key}).JSON(t)
	polled, _ := json.Marshal(st["result"])
	var pushed map[string]any
	_ = json.Unmarshal(byJob[ids[0]].Body, &pushed)
	if sent, _ := json.Marshal(pushed["data"].(map[string]any)["result"]); string(sent) != string(polled) {
		t.Errorf("pushed result %s, polled %s", sent, polled)
	}
	waitUntil(t, 5*time.Second, "an empty outbox", func() bool {
		p, err := f.hooks.Pending(t.Context())
		return err == nil && p == 0
	})
	waitUntil(t, 5*time.Second, "every delivery counted", func() bool {
		return metricValue(t, f.reg, "validmail_webhook_deliveries_total", "delivered") == n+1
	})
}

// TestWebhookEventChoice: an endpoint receives only the event types it
// chose; events must name known types.
func TestWebhookEventChoice(t *testing.T) {
	f := setup(t, &options{webhooks: true, loopback: true, credits: 100})
	rc := newReceiver(t)
	f.putHook(t, f.key, rc.srv.URL+"/events")
	for _, body := range []string{`{"events":[]}`, `{"events":["job.done"]}`, `{"events":"batch.completed"}`} {
		if resp := f.do(t, req{method: "PUT", target: "/api/v1/webhook", key: f.key, body: body}); resp.Code != 400 {
			t.Errorf("PUT %s: %d %s, want 400", body, resp.Code, resp.Body)
		}
	}
	resp := f.do(t, req{method: "GET", target: "/api/v1/webhook", key: f.key})
	if got := fmt.Sprint(resp.JSON(t)["events"]); got != "[validation.completed batch.completed]" {
		t.Fatalf("default events %s", got)
	}
	resp = f.do(t, req{method: "PUT", target: "/api/v1/webhook", key: f.key, body: `{"events":["batch.completed","batch.completed"]}`})
	if got := fmt.Sprint(resp.JSON(t)["events"]); resp.Code != 200 || got != "[batch.completed]" {
		t.Fatalf("PUT events: %d %s", resp.Code, resp.Body)
	}
	f.runPool(t)
	f.runDispatcher(t)
	resp = f.do(t, req{method: "POST", target: "/validate/async", key: f.key, body: `{"emails":["a@good.com","b@good.com","c@other.com"]}`})
	if resp.Code != 202 {
		t.Fatalf("submit: %d %s", resp.Code, resp.Body)
	}
	batch := resp.JSON(t)["batch_id"].(string)
	waitUntil(t, 10*time.Second, "the batch event", func() bool { return len(rc.events()) >= 1 })
	time.Sleep(100 * time.Millisecond) // let a stray job event show up
	evs := rc.events()
	if len(evs) != 1 || evs[0].Type != webhook.TypeBatchCompleted || !strings.Contains(string(evs[0].Body), `"batch_id":"`+batch+`"`) {
		t.Fatalf("received %d events, first %s; want only the batch's completion", len(evs), evs[0].Body)
	}
}
