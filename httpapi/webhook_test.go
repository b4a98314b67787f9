package httpapi_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/httpapi"
	"github.com/validmail/validmail/store"
	"github.com/validmail/validmail/store/memstore"
	"github.com/validmail/validmail/webhook"
)

var secretRE = regexp.MustCompile(`^whsec_[A-Za-z0-9+/]+={0,2}$`)

// hookEvent is what a receiver saw of one request.
type hookEvent struct {
	ID     string
	Header http.Header
	Body   []byte
	Type   string
	JobID  string
	Result emailcheck.Result
}

// receiver is a webhook endpoint on loopback that records every request
// and answers status (204 by default).
type receiver struct {
	srv *httptest.Server
	mu  sync.Mutex
	got []hookEvent
	// status, when set, chooses the answer to each request.
	status func(n int) int
	// each, when set, is called with every event, outside the lock.
	each func(hookEvent)
}

func newReceiver(t *testing.T) *receiver {
	rc := &receiver{}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		ev := hookEvent{ID: r.Header.Get(webhook.HeaderID), Header: r.Header.Clone(), Body: body}
		var payload struct {
			Type string
			Data struct {
				JobID  string `json:"job_id"`
				Result emailcheck.Result
			}
		}
		if err := json.Unmarshal(body, &payload); err != nil {
			t.Errorf("receiver: body %q: %v", body, err)
		}
		ev.Type, ev.JobID, ev.Result = payload.Type, payload.Data.JobID, payload.Data.Result
		rc.mu.Lock()
		rc.got = append(rc.got, ev)
		n := len(rc.got)
		status := rc.status
		each := rc.each
		rc.mu.Unlock()
		if each != nil {
			each(ev)
		}
		code := http.StatusNoContent
		if status != nil {
			code = status(n)
		}
		w.WriteHeader(code)
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) events() []hookEvent {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]hookEvent(nil), rc.got...)
}

// putHook creates the account's endpoint at url and returns its secret.
func (f *fixture) putHook(t *testing.T, key, url string) string {
	t.Helper()
	resp := f.do(t, req{method: "PUT", target: "/api/v1/webhook", key: key, body: `{"url":"` + url + `"}`})
	if resp.Code != http.StatusCreated {
		t.Fatalf("PUT /api/v1/webhook: %d %s", resp.Code, resp.Body)
	}
	secret, _ := resp.JSON(t)["secret"].(string)
	if !secretRE.MatchString(secret) {
		t.Fatalf("secret %q", secret)
	}
	return secret
}

// onlyJobEvents makes the account's endpoint receive validation.completed
// events only.
func (f *fixture) onlyJobEvents(t *testing.T) {
	t.Helper()
	resp := f.do(t, req{method: "PUT", target: "/api/v1/webhook", key: f.key, body: `{"events":["validation.completed"]}`})
	if resp.Code != http.StatusOK {
		t.Fatalf("PUT events: %d %s", resp.Code, resp.Body)
	}
	if f.events != nil {
		f.events.Forget(f.acct.ID)
	}
}

// waitUntil polls cond for up to d.
func waitUntil(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestWebhookEndpointLifecycle(t *testing.T) {
	t.Parallel()
	f := setup(t, &options{webhooks: true})
	const path = "/api/v1/webhook"
	wantProblem(t, f.do(t, req{method: "GET", target: path, key: f.key}), 404, "not_found")
	wantProblem(t, f.do(t, req{method: "DELETE", target: path, key: f.key}), 404, "not_found")
	wantProblem(t, f.do(t, req{method: "POST", target: path + "/test", key: f.key}), 404, "not_found")

	// Bad bodies.
	for _, body := range []string{
		`{}`,
		`{"enabled":true}`,
		`{"url":"ftp://example.com/hook"}`,
		`{"url":"/relative"}`,
		`{"url":"https://user:pw@example.com/hook"}`,
		`{"url":"https://example.com/hook#frag"}`,
		`{"url":"https://example.com/` + strings.Repeat("a", 2048) + `"}`,
		`{"url":42}`,
		`[]`,
	} {
		wantProblem(t, f.do(t, req{method: "PUT", target: path, key: f.key, body: body}), 400, "invalid_body")
	}
	wantProblem(t, f.do(t, req{method: "PUT", target: path, key: f.key, body: `{"url":`}), 400, "invalid_json")
	wantProblem(t, f.do(t, req{method: "PUT", target: path, key: f.key, body: `{}`, header: map[string]string{"Content-Type": "text/plain"}}), 415, "unsupported_media_type")

	// Creation shows the secret once.
	resp := f.do(t, req{method: "PUT", target: path, key: f.key, body: `{"url":"https://hooks.example.com/vm"}`})
	if resp.Code != http.StatusCreated {
		t.Fatalf("create: %d %s", resp.Code, resp.Body)
	}
	m := resp.JSON(t)
	secret, _ := m["secret"].(string)
	if !secretRE.MatchString(secret) || m["url"] != "https://hooks.example.com/vm" || m["enabled"] != true ||
		m["disabled_reason"] != nil || m["previous_secret_expires_at"] != nil {
		t.Fatalf("created %s", resp.Body)
	}
	ep, err := f.hooks.GetEndpoint(t.Context(), f.acct.ID)
	if err != nil || ep.Secret != secret {
		t.Fatalf("stored endpoint %+v, %v", ep, err)
	}
	resp = f.do(t, req{method: "GET", target: path, key: f.key})
	if resp.Code != 200 || strings.Contains(string(resp.Body), secret) || resp.JSON(t)["secret"] != nil {
		t.Fatalf("GET shows %d %s", resp.Code, resp.Body)
	}

	// Updates keep what the body leaves out and never show the secret.
	resp = f.do(t, req{method: "PUT", target: path, key: f.key, body: `{"enabled":false}`})
	m = resp.JSON(t)
	if resp.Code != 200 || m["secret"] != nil || m["enabled"] != false || m["url"] != "https://hooks.example.com/vm" {
		t.Fatalf("disable: %d %s", resp.Code, resp.Body)
	}
	resp = f.do(t, req{method: "PUT", target: path, key: f.key, body: `{"url":"https://hooks.example.com/v2"}`})
	m = resp.JSON(t)
	if resp.Code != 200 || m["secret"] != nil || m["enabled"] != false || m["url"] != "https://hooks.example.com/v2" {
		t.Fatalf("move: %d %s", resp.Code, resp.Body)
	}
	if ep, _ := f.hooks.GetEndpoint(t.Context(), f.acct.ID); ep.Secret != secret {
		t.Fatal("an update changed the secret")
	}

	// Rotation shows the new secret once; the old one signs for 24 h.
	before := time.Now()
	resp = f.do(t, req{method: "PUT", target: path, key: f.key, body: `{"enabled":true,"rotate_secret":true}`})
	m = resp.JSON(t)
	rotated, _ := m["secret"].(string)
	if resp.Code != 200 || !secretRE.MatchString(rotated) || rotated == secret || m["enabled"] != true {
		t.Fatalf("rotate: %d %s", resp.Code, resp.Body)
	}
	until, err := time.Parse(time.RFC3339, m["previous_secret_expires_at"].(string))
	if err != nil || until.Before(before.Add(webhook.RotationGrace-time.Second)) || until.After(time.Now().Add(webhook.RotationGrace)) {
		t.Fatalf("previous_secret_expires_at %v (%v)", m["previous_secret_expires_at"], err)
	}
	ep, _ = f.hooks.GetEndpoint(t.Context(), f.acct.ID)
	if got := ep.SigningSecrets(time.Now()); len(got) != 2 || got[0] != rotated || got[1] != secret {
		t.Fatalf("signing secrets after rotation: %d", len(got))
	}
	if got := ep.SigningSecrets(time.Now().Add(webhook.RotationGrace + time.Second)); len(got) != 1 {
		t.Fatalf("the old secret still signs after 24 h")
	}

	// Delete answers the endpoint it removed.
	resp = f.do(t, req{method: "DELETE", target: path, key: f.key})
	if m := resp.JSON(t); resp.Code != 200 || m["url"] != "https://hooks.example.com/v2" || m["secret"] != nil {
		t.Fatalf("delete: %d %s", resp.Code, resp.Body)
	}
	wantProblem(t, f.do(t, req{method: "GET", target: path, key: f.key}), 404, "not_found")
	wantProblem(t, f.do(t, req{method: "PUT", target: path, key: f.key, body: `{"rotate_secret":true}`}), 400, "invalid_body")

	// Wrong methods.
	for target, allow := range map[string]string{
		"POST " + path:                   "DELETE, GET, HEAD, PUT",
		"PUT " + path + "/test":          "POST",
		"DELETE " + path + "/deliveries": "GET, HEAD",
	} {
		method, p, _ := strings.Cut(target, " ")
		resp := f.do(t, req{method: method, target: p, key: f.key})
		wantProblem(t, resp, 405, "method_not_allowed")
		if resp.Header.Get("Allow") != allow {
			t.Errorf("%s: Allow %q, want %q", target, resp.Header.Get("Allow"), allow)
		}
	}
}

func TestWebhookAccountsAreSeparate(t *testing.T) {
	t.Parallel()
	f := setup(t, &options{webhooks: true})
	_, other := f.newAccount(t, "other@good.com", 0, store.AllPermissions())
	f.putHook(t, f.key, "https://hooks.example.com/owner")
	wantProblem(t, f.do(t, req{method: "GET", target: "/api/v1/webhook", key: other}), 404, "not_found")
	wantProblem(t, f.do(t, req{method: "DELETE", target: "/api/v1/webhook", key: other}), 404, "not_found")
	if _, err := f.hooks.GetEndpoint(t.Context(), f.acct.ID); err != nil {
		t.Fatal(err)
	}
}

func TestWebhookNeedsPermission(t *testing.T) {
	t.Parallel()
	f := setup(t, &options{webhooks: true})
	limited := f.newKey(t, f.acct.ID, []store.Permission{store.PermValidate, store.PermBatch, store.PermStats, store.PermKeys})
	for _, rq := range []req{
		{method: "GET", target: "/api/v1/webhook"},
		{method: "PUT", target: "/api/v1/webhook", body: `{"url":"https://hooks.example.com/"}`},
		{method: "DELETE", target: "/api/v1/webhook"},
		{method: "POST", target: "/api/v1/webhook/test"},
		{method: "GET", target: "/api/v1/webhook/deliveries"},
	} {
		rq.key = limited
		if m := wantProblem(t, f.do(t, rq), 403, "permission_denied"); m["permission"] != "webhooks" {
			t.Errorf("%s %s: problem %v", rq.method, rq.target, m)
		}
		rq.key = ""
		wantProblem(t, f.do(t, rq), 401, "missing_api_key")
	}
	if _, err := f.hooks.GetEndpoint(t.Context(), f.acct.ID); !errors.Is(err, webhook.ErrNotFound) {
		t.Fatalf("a key without the permission changed the endpoint: %v", err)
	}
}

// Without webhook support configured the routes do not exist.
func TestWebhookRoutesNotConfigured(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	for _, rq := range []req{
		{method: "GET", target: "/api/v1/webhook"},
		{method: "PUT", target: "/api/v1/webhook", body: `{"url":"https://hooks.example.com/"}`},
		{method: "DELETE", target: "/api/v1/webhook"},
		{method: "POST", target: "/api/v1/webhook/test"},
		{method: "GET", target: "/api/v1/webhook/deliveries"},
	} {
		rq.key = f.key
		wantProblem(t, f.do(t, rq), 404, "not_found")
	}
}

func TestWebhookConfigErrors(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	hooks := memstore.NewBackend().Outbox.(*memstore.Webhooks)
	disp, err := webhook.NewDispatcher(hooks, hooks, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	base := httpapi.Config{}
	for name, tweak := range map[string]func(*httpapi.Config){
		"no outbox":   func(c *httpapi.Config) { c.Webhooks, c.WebhookSender = hooks, disp },
		"no sender":   func(c *httpapi.Config) { c.Webhooks, c.WebhookOutbox = hooks, hooks },
		"no webhooks": func(c *httpapi.Config) { c.WebhookOutbox, c.WebhookSender = hooks, disp },
	} {
		cfg := base
		tweak(&cfg)
		if _, err := httpapi.NewHandler(f.v, f.ledger, f.queue, f.st, &cfg); !errors.Is(err, httpapi.ErrConfig) {
			t.Errorf("%s: NewHandler error %v, want ErrConfig", name, err)
		}
	}
}

// PUT, a test ping, a batch, the delivery log, then a rotation: the
// whole path against a receiver on loopback.
func TestWebhookFlow(t *testing.T) {
	t.Parallel()
	f := setup(t, &options{webhooks: true, loopback: true})
	rc := newReceiver(t)
	f.runPool(t)
	f.runDispatcher(t)

	// A job completed before the endpoint exists sends nothing; the event
	// source remembers that, and must forget it when the endpoint is put.
	resp := f.do(t, req{method: "POST", target: "/validate/async", key: f.key, body: `{"emails":["early@good.com"]}`})
	early := resp.JSON(t)["job_ids"].([]any)[0].(string)
	waitUntil(t, 5*time.Second, "the first job", func() bool {
		r := f.do(t, req{method: "GET", target: "/validate/status/" + early, key: f.key})
		return r.JSON(t)["state"] == "completed"
	})

	secret := f.putHook(t, f.key, rc.srv.URL+"/hook")
	f.onlyJobEvents(t)

	// The test ping is signed and reported.
	resp = f.do(t, req{method: "POST", target: "/api/v1/webhook/test", key: f.key})
	m := resp.JSON(t)
	if resp.Code != 200 || m["success"] != true || m["status_code"] != 204.0 || m["error"] != nil || m["url"] != rc.srv.URL+"/hook" {
		t.Fatalf("test ping: %d %s", resp.Code, resp.Body)
	}
	got := rc.events()
	if len(got) != 1 || got[0].Type != webhook.TypeTest || got[0].ID != m["event_id"] {
		t.Fatalf("receiver got %+v", got)
	}
	if err := webhook.Verify(secret, got[0].Header, got[0].Body); err != nil {
		t.Fatalf("test ping signature: %v", err)
	}

	// A batch is delivered, signed, and shows in the log.
	resp = f.do(t, req{method: "POST", target: "/validate/async", key: f.key, body: `{"emails":["a@good.com","b@good.com","c@nowhere.invalid"]}`})
	var ids []string
	for _, id := range resp.JSON(t)["job_ids"].([]any) {
		ids = append(ids, id.(string))
	}
	waitUntil(t, 5*time.Second, "three deliveries", func() bool {
		p, err := f.hooks.Pending(t.Context())
		return len(rc.events()) >= 4 && err == nil && p == 0
	})
	byJob := map[string]hookEvent{}
	for _, ev := range rc.events()[1:] {
		if err := webhook.Verify(secret, ev.Header, ev.Body); err != nil {
			t.Errorf("event %s: %v", ev.ID, err)
		}
		byJob[ev.JobID] = ev
	}
	for i, email := range []string{"a@good.com", "b@good.com", "c@nowhere.invalid"} {
		if ev, ok := byJob[ids[i]]; !ok || ev.Result.Email != email || ev.Type != webhook.TypeValidationCompleted {
			t.Errorf("job %s (%s): %+v", ids[i], email, ev)
		}
	}
	if _, ok := byJob[early]; ok {
		t.Error("the job completed before the endpoint existed was delivered")
	}
	resp = f.do(t, req{method: "GET", target: "/api/v1/webhook/deliveries", key: f.key})
	ds := resp.JSON(t)["deliveries"].([]any)
	if resp.Code != 200 || len(ds) != 3 {
		t.Fatalf("deliveries: %d %s", resp.Code, resp.Body)
	}
	for _, d := range ds {
		d := d.(map[string]any)
		ev, ok := byJob[d["job_id"].(string)]
		if !ok || d["event_id"] != ev.ID || d["state"] != "delivered" || d["status_code"] != 204.0 || d["error"] != nil ||
			d["attempted_at"] == nil || d["next_attempt_at"] != nil || d["finished_at"] == nil || len(d["attempts"].([]any)) != 1 {
			t.Errorf("delivery %v", d)
		}
	}
	resp = f.do(t, req{method: "GET", target: "/api/v1/webhook/deliveries?limit=2", key: f.key})
	if n := len(resp.JSON(t)["deliveries"].([]any)); n != 2 {
		t.Errorf("limit=2 listed %d", n)
	}
	for _, bad := range []string{"0", "-1", "x", "1.5"} {
		wantProblem(t, f.do(t, req{method: "GET", target: "/api/v1/webhook/deliveries?limit=" + bad, key: f.key}), 400, "invalid_body")
	}
	resp = f.do(t, req{method: "GET", target: "/api/v1/webhook/deliveries?limit=100000", key: f.key})
	if resp.Code != 200 {
		t.Errorf("large limit: %d", resp.Code)
	}

	// After a rotation a receiver with either secret accepts messages.
	resp = f.do(t, req{method: "PUT", target: "/api/v1/webhook", key: f.key, body: `{"rotate_secret":true}`})
	rotated := resp.JSON(t)["secret"].(string)
	resp = f.do(t, req{method: "POST", target: "/api/v1/webhook/test", key: f.key})
	if resp.JSON(t)["success"] != true {
		t.Fatalf("ping after rotation: %s", resp.Body)
	}
	last := rc.events()[len(rc.events())-1]
	for _, s := range []string{secret, rotated} {
		if err := webhook.Verify(s, last.Header, last.Body); err != nil {
			t.Errorf("after rotation, verifying with one secret: %v", err)
		}
	}
	if n := strings.Count(last.Header.Get(webhook.HeaderSignature), "v1,"); n != 2 {
		t.Errorf("%d signatures during rotation, want 2", n)
	}

	// The dispatcher's outcomes reach the metrics, just after the outbox.
	waitUntil(t, 5*time.Second, "three deliveries counted", func() bool {
		return metricValue(t, f.reg, "validmail_webhook_deliveries_total", "delivered") == 3
	})
}

// A failing receiver: the log shows the failed attempt and when the next
// one is due; the metrics count it.
func TestWebhookDeliveryLogShowsFailures(t *testing.T) {
	t.Parallel()
	f := setup(t, &options{webhooks: true, loopback: true})
	rc := newReceiver(t)
	rc.status = func(int) int { return http.StatusServiceUnavailable }
	f.runPool(t)
	f.runDispatcher(t)
	f.putHook(t, f.key, rc.srv.URL)
	f.onlyJobEvents(t)
	resp := f.do(t, req{method: "POST", target: "/validate/async", key: f.key, body: `{"emails":["a@good.com"]}`})
	job := resp.JSON(t)["job_ids"].([]any)[0].(string)
	waitUntil(t, 5*time.Second, "a failed attempt", func() bool {
		ds, _ := f.hooks.Deliveries(t.Context(), webhook.ListParams{AccountID: f.acct.ID})
		return len(ds) == 1 && len(ds[0].Attempts) == 1 && ds[0].NextAttempt.After(time.Now().Add(time.Second))
	})
	// The outcome is observed just after it is stored.
	waitUntil(t, 5*time.Second, "the retry counted", func() bool {
		return metricValue(t, f.reg, "validmail_webhook_deliveries_total", "retry") == 1
	})
	resp = f.do(t, req{method: "GET", target: "/api/v1/webhook/deliveries", key: f.key})
	d := resp.JSON(t)["deliveries"].([]any)[0].(map[string]any)
	if d["job_id"] != job || d["state"] != "pending" || d["status_code"] != 503.0 || d["error"] != "http_status" || d["next_attempt_at"] == nil {
		t.Fatalf("delivery %v", d)
	}
	next, _ := time.Parse(time.RFC3339, d["next_attempt_at"].(string))
	if wait := time.Until(next); wait < 3*time.Second || wait > 6*time.Second {
		t.Errorf("next attempt in %v, want about 5 s", wait)
	}
	if n := metricValue(t, f.reg, "validmail_webhook_deliveries_total", "retry"); n != 1 {
		t.Errorf("retry counter %v", n)
	}
	if n := metricValue(t, f.reg, "validmail_webhook_attempts_total", "5xx"); n != 1 {
		t.Errorf("5xx attempts %v", n)
	}
	if n := metricValue(t, f.reg, "validmail_webhook_outbox_pending", ""); n != 1 {
		t.Errorf("outbox depth %v, want 1", n)
	}

	// Deleting the endpoint keeps the log readable.
	f.do(t, req{method: "DELETE", target: "/api/v1/webhook", key: f.key})
	resp = f.do(t, req{method: "GET", target: "/api/v1/webhook/deliveries", key: f.key})
	if resp.Code != 200 || len(resp.JSON(t)["deliveries"].([]any)) != 1 {
		t.Fatalf("deliveries after delete: %d %s", resp.Code, resp.Body)
	}
}

// An endpoint on loopback is accepted as a URL, but the dispatcher's
// client refuses to connect without an allowlist: the test ping reports
// the refusal and the receiver sees nothing.
func TestWebhookTestPingRefusesPrivateAddress(t *testing.T) {
	t.Parallel()
	f := setup(t, &options{webhooks: true})
	rc := newReceiver(t)
	for _, url := range []string{rc.srv.URL, "http://10.0.0.1/hook", "http://169.254.169.254/latest/meta-data", "http://[::1]:9/hook"} {
		resp := f.do(t, req{method: "PUT", target: "/api/v1/webhook", key: f.key, body: `{"url":"` + url + `"}`})
		if resp.Code != 200 && resp.Code != 201 {
			t.Fatalf("PUT %s: %d %s", url, resp.Code, resp.Body)
		}
		resp = f.do(t, req{method: "POST", target: "/api/v1/webhook/test", key: f.key})
		m := resp.JSON(t)
		if resp.Code != 200 || m["success"] != false || m["status_code"] != nil || m["error"] != webhook.ReasonBlockedAddress {
			t.Errorf("ping %s: %d %s", url, resp.Code, resp.Body)
		}
	}
	if n := len(rc.events()); n != 0 {
		t.Fatalf("the loopback receiver got %d requests", n)
	}
}

// metricValue returns the value of the counter or gauge name whose one
// label has the value label ("" for a metric without labels), or 0.
func metricValue(t *testing.T, reg prometheus.Gatherer, name, label string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if ls := m.GetLabel(); (label == "" && len(ls) == 0) || (len(ls) == 1 && ls[0].GetValue() == label) {
				if c := m.GetCounter(); c != nil {
					return c.GetValue()
				}
				return m.GetGauge().GetValue()
			}
		}
	}
	return 0
}
