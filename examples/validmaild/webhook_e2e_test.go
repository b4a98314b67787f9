package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/validmail/validmail/emailcheck/dnstest"
	"github.com/validmail/validmail/store"
	"github.com/validmail/validmail/webhook"
)

// hookEvent is one webhook request as a receiver got it.
type hookEvent struct {
	id     string // webhook-id
	header http.Header
	body   []byte
	at     time.Time
}

// receiver is a webhook endpoint on loopback that records every request
// and answers 204.
type receiver struct {
	srv *httptest.Server

	mu     sync.Mutex
	events []hookEvent
	// arrived gets a value for each request, never blocking (buffered
	// for the expected count).
	arrived chan struct{}
}

func newReceiver(t *testing.T, expect int) *receiver {
	rc := &receiver{arrived: make(chan struct{}, expect+16)}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rc.mu.Lock()
		rc.events = append(rc.events, hookEvent{r.Header.Get(webhook.HeaderID), r.Header.Clone(), body, time.Now()})
		rc.mu.Unlock()
		select {
		case rc.arrived <- struct{}{}:
		default:
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

// snapshot returns the requests received so far.
func (rc *receiver) snapshot() []hookEvent {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.events)
}

// wait waits until n requests have arrived in all, or fails after timeout.
func (rc *receiver) wait(t *testing.T, n int, timeout time.Duration) {
	t.Helper()
	deadline := time.After(timeout)
	for len(rc.snapshot()) < n {
		select {
		case <-rc.arrived:
		case <-deadline:
			t.Fatalf("%d of %d webhook requests received within %v", len(rc.snapshot()), n, timeout)
		}
	}
}

// completedEvent is the payload of a validation.completed event.
type completedEvent struct {
	Type      string `json:"type"`
	Timestamp string `json:"timestamp"`
	Data      struct {
		JobID  string          `json:"job_id"`
		Result json.RawMessage `json:"result"`
	} `json:"data"`
}

// hookZone serves the domains of the webhook batch: d00.hooks.io to
// d35.hooks.io have a mail server; nx36.hooks.io to nx39.hooks.io do not
// exist.
func hookZone(t *testing.T) *dnstest.Server {
	return dnstest.Start(t, zone(), &dnstest.Options{Fallback: func(name string) (dnstest.Domain, bool) {
		if strings.HasPrefix(name, "d") && strings.HasSuffix(name, ".hooks.io") {
			return dnstest.Domain{MX: []dnstest.MX{{Pref: 10, Host: "mx." + name}}}, true
		}
		return dnstest.Domain{}, false
	}})
}

// hookBatch returns n addresses spread over the 40 domains of hookZone.
func hookBatch(n int) []string {
	emails := make([]string, n)
	for i := range emails {
		d := i % 40
		if d < 36 {
			emails[i] = fmt.Sprintf("user%d@d%02d.hooks.io", i, d)
		} else {
			emails[i] = fmt.Sprintf("user%d@nx%02d.hooks.io", i, d)
		}
	}
	return emails
}

// TestWebhookEndToEnd runs the binary with -webhook-allow 127.0.0.1,
// configures a webhook at a loopback receiver through the API, checks it
// with a test ping, submits one batch and waits for one signed
// validation.completed event per job, each carrying the job's id and
// result, none twice.
//
// It does not run in parallel with other tests, nor its subtests with
// each other: it measures the time from submission to last delivery.
func TestWebhookEndToEnd(t *testing.T) {
	for _, st := range stores() {
		t.Run(st.name, func(t *testing.T) {
			const n = 1000
			url := st.fresh(t)
			dnsSrv := hookZone(t)
			email, key := "hooks@example.com", store.NewSecret()
			in := start(t, "-store", url, "-dns", dnsSrv.Addr(), "-webhook-allow", "127.0.0.1",
				"-bootstrap-email", email, "-bootstrap-key", key, "-bootstrap-credits", "5000", "-metrics")
			c := client{t, in.base, key}
			rc := newReceiver(t, n+1)

			// Configure the endpoint: the secret is shown at creation only.
			hookURL := rc.srv.URL + "/hooks"
			resp, m := c.do("PUT", "/api/v1/webhook", map[string]any{"url": hookURL})
			if resp.StatusCode != http.StatusCreated {
				t.Fatalf("PUT /api/v1/webhook: %d %v", resp.StatusCode, m)
			}
			secret, _ := m["secret"].(string)
			if _, err := webhook.ParseSecret(secret); err != nil || m["url"] != hookURL || m["enabled"] != true {
				t.Fatalf("PUT /api/v1/webhook = %v (%v), want the url, enabled and a whsec_ secret", m, err)
			}
			resp, m = c.do("GET", "/api/v1/webhook", nil)
			if _, shown := m["secret"]; resp.StatusCode != 200 || shown || m["url"] != hookURL {
				t.Errorf("GET /api/v1/webhook: %d %v, want the endpoint without its secret", resp.StatusCode, m)
			}

			// A signed ping.
			resp, m = c.do("POST", "/api/v1/webhook/test", nil)
			if resp.StatusCode != 200 || m["success"] != true || m["status_code"] != float64(204) {
				t.Fatalf("POST /api/v1/webhook/test: %d %v", resp.StatusCode, m)
			}
			rc.wait(t, 1, 10*time.Second)
			ping := rc.snapshot()[0]
			if err := webhook.Verify(secret, ping.header, ping.body); err != nil || ping.id != m["event_id"] {
				t.Errorf("ping %s (event_id %v): %v", ping.id, m["event_id"], err)
			}
			if !strings.Contains(string(ping.body), `"type":"webhook.test"`) {
				t.Errorf("ping body %s, want a webhook.test event", ping.body)
			}

			// The batch.
			batch := hookBatch(n)
			submitted := time.Now()
			resp, m = c.do("POST", "/validate/async", map[string]any{"emails": batch})
			if resp.StatusCode != http.StatusAccepted {
				t.Fatalf("POST /validate/async: %d %v", resp.StatusCode, m)
			}
			accepted := time.Since(submitted)
			jobIDs := make(map[string]string, n) // job id → address
			for i, id := range m["job_ids"].([]any) {
				jobIDs[id.(string)] = batch[i]
			}
			if len(jobIDs) != n {
				t.Fatalf("%d distinct job ids, want %d", len(jobIDs), n)
			}
			// Each job's event, and the batch's.
			rc.wait(t, n+2, 4*time.Minute)
			got := rc.snapshot()[1:]
			last := got[len(got)-1].at
			elapsed := last.Sub(submitted)
			time.Sleep(200 * time.Millisecond) // let a duplicate show up
			got = nil
			var batchEvents []hookEvent
			for _, ev := range rc.snapshot()[1:] {
				if strings.Contains(string(ev.body), `"type":"batch.completed"`) {
					batchEvents = append(batchEvents, ev)
				} else {
					got = append(got, ev)
				}
			}
			if len(batchEvents) != 1 {
				t.Fatalf("%d batch.completed events, want 1", len(batchEvents))
			}
			if err := webhook.Verify(secret, batchEvents[0].header, batchEvents[0].body); err != nil {
				t.Errorf("batch event: %v", err)
			}
			wantData := `"data":{"batch_id":"` + m["batch_id"].(string) + `","total":1000,"counts":{"INVALID_DOMAIN":100,"LIKELY":900}}}`
			if !strings.HasSuffix(string(batchEvents[0].body), wantData) {
				t.Errorf("batch event %s, want it to end with %s", batchEvents[0].body, wantData)
			}

			seenEvent := make(map[string]bool, n)
			results := make(map[string]json.RawMessage, n)
			for _, ev := range got {
				if err := webhook.Verify(secret, ev.header, ev.body); err != nil {
					t.Errorf("event %s: %v", ev.id, err)
				}
				if seenEvent[ev.id] {
					t.Errorf("event %s delivered twice", ev.id)
				}
				seenEvent[ev.id] = true
				var p completedEvent
				if err := json.Unmarshal(ev.body, &p); err != nil || p.Type != webhook.TypeValidationCompleted {
					t.Errorf("event %s: %v, body %s", ev.id, err, ev.body)
					continue
				}
				addr, ok := jobIDs[p.Data.JobID]
				switch {
				case !ok:
					t.Errorf("event %s: job id %q is not one of the batch", ev.id, p.Data.JobID)
				case results[p.Data.JobID] != nil:
					t.Errorf("job %s has two events", p.Data.JobID)
				default:
					var r struct{ Email string }
					if err := json.Unmarshal(p.Data.Result, &r); err != nil || r.Email != addr {
						t.Errorf("job %s: result for %q (%v), want %s", p.Data.JobID, r.Email, err, addr)
					}
					results[p.Data.JobID] = p.Data.Result
				}
			}
			if len(got) != n || len(results) != n {
				t.Errorf("%d requests carrying %d distinct jobs, want %d", len(got), len(results), n)
			}

			// A sample: the event carries the result polling answers.
			statuses := map[string]int{}
			for _, raw := range results {
				var r map[string]any
				json.Unmarshal(raw, &r)
				checkResult(t, r, "api_async", false)
				statuses[status(r)]++
			}
			ids := slices.Sorted(maps.Keys(results))
			rnd := rand.New(rand.NewPCG(1, 2))
			for range 20 {
				id := ids[rnd.IntN(len(ids))]
				job := c.poll(id)
				var fromHook any
				json.Unmarshal(results[id], &fromHook)
				if !reflect.DeepEqual(job["result"], fromHook) {
					t.Errorf("job %s: status answers %v, event carries %v", id, job["result"], fromHook)
				}
			}
			if statuses["LIKELY"] == 0 || statuses["INVALID_DOMAIN"] == 0 {
				t.Errorf("statuses %v, want LIKELY and INVALID_DOMAIN results", statuses)
			}

			// The delivery log and the metrics agree.
			resp, m = c.do("GET", "/api/v1/webhook/deliveries?limit=5", nil)
			ds, _ := m["deliveries"].([]any)
			if resp.StatusCode != 200 || len(ds) != 5 {
				t.Fatalf("GET /api/v1/webhook/deliveries: %d %v", resp.StatusCode, m)
			}
			for _, d := range ds {
				if d := d.(map[string]any); d["state"] != "delivered" || d["status_code"] != float64(204) {
					t.Errorf("delivery %v, want delivered with 204", d)
				}
			}
			if !waitFor(5*time.Second, func() bool {
				return metric(t, in.metricsURL(), `validmail_webhook_deliveries_total{outcome="delivered"}`) == float64(n+1)
			}) {
				t.Errorf("validmail_webhook_deliveries_total{outcome=\"delivered\"} = %v, want %d",
					metric(t, in.metricsURL(), `validmail_webhook_deliveries_total{outcome="delivered"}`), n+1)
			}

			t.Logf("%s: %d addresses (%v), accepted in %v; %d signed events delivered %v after the submission (%.0f events/s)",
				st.name, n, statuses, accepted.Round(time.Millisecond), len(results),
				elapsed.Round(time.Millisecond), float64(len(results))/elapsed.Seconds())
			in.stop()
			if in.record("webhook dispatcher stopped") == nil {
				t.Errorf("no \"webhook dispatcher stopped\" record in the log")
			}
		})
	}
}

// TestWebhookLoopbackRefused: without -webhook-allow the service refuses
// to reach a receiver on loopback, and says so in the test response and
// the delivery log.
func TestWebhookLoopbackRefused(t *testing.T) {
	t.Parallel()
	dnsSrv := hookZone(t)
	key := store.NewSecret()
	in := start(t, "-dns", dnsSrv.Addr(), "-bootstrap-email", "ssrf@example.com", "-bootstrap-key", key)
	c := client{t, in.base, key}
	rc := newReceiver(t, 1)
	if resp, m := c.do("PUT", "/api/v1/webhook", map[string]any{"url": rc.srv.URL}); resp.StatusCode != http.StatusCreated {
		t.Fatalf("PUT /api/v1/webhook: %d %v", resp.StatusCode, m)
	}
	resp, m := c.do("POST", "/api/v1/webhook/test", nil)
	if errText, _ := m["error"].(string); resp.StatusCode != 200 || m["success"] != false || errText != "blocked_address" {
		t.Errorf("POST /api/v1/webhook/test: %d %v, want success false and an address error", resp.StatusCode, m)
	}

	// A completed job's event is refused too: its first attempt fails
	// with the same error and is rescheduled.
	resp, m = c.do("POST", "/validate/async", map[string]any{"emails": []string{"a@d01.hooks.io"}})
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("POST /validate/async: %d %v", resp.StatusCode, m)
	}
	var d map[string]any
	if !waitFor(20*time.Second, func() bool {
		_, m := c.do("GET", "/api/v1/webhook/deliveries", nil)
		ds, _ := m["deliveries"].([]any)
		if len(ds) == 0 {
			return false
		}
		d = ds[0].(map[string]any)
		return d["error"] != nil
	}) {
		t.Fatalf("no failed attempt in the delivery log: %v", d)
	}
	if errText, _ := d["error"].(string); d["state"] != "pending" || errText != "blocked_address" || d["next_attempt_at"] == nil {
		t.Errorf("delivery %v, want pending with an address error and a next attempt", d)
	}
	if n := len(rc.snapshot()); n != 0 {
		t.Errorf("the loopback receiver got %d requests", n)
	}
	in.stop()
}

// waitFor polls cond every 50 ms until it holds or timeout passes.
func waitFor(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// metric returns the value of the sample named series (name and labels
// as the text exposition writes them) at base/metrics, or -1.
func metric(t *testing.T, base, series string) float64 {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for line := range strings.SplitSeq(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			var f float64
			if _, err := fmt.Sscan(v, &f); err == nil {
				return f
			}
		}
	}
	return -1
}
