package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/validmail/validmail/emailcheck/dnstest"
	"github.com/validmail/validmail/store"
	"github.com/validmail/validmail/webhook"
)

// TestCustomService starts the binary's service on memory, validates an
// address, submits a batch and receives its webhook on loopback, then
// stops it.
func TestCustomService(t *testing.T) {
	dns := dnstest.Start(t, dnstest.Zone{"gmail.com": {MX: []dnstest.MX{{Pref: 5, Host: "gmail-smtp-in.l.google.com"}}}}, nil)
	hooks := make(chan []byte, 4)
	var secret string
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := webhook.Verify(secret, r.Header, body); err != nil {
			t.Errorf("webhook signature: %v", err)
		}
		hooks <- body
		w.WriteHeader(http.StatusNoContent)
	}))
	defer receiver.Close()

	key := store.NewSecret()
	env := map[string]string{
		"VALIDMAIL_DNS":             dns.Addr(),
		"VALIDMAIL_WEBHOOK_ALLOW":   "127.0.0.1",
		"VALIDMAIL_BOOTSTRAP_EMAIL": "ops@example.org",
		"VALIDMAIL_BOOTSTRAP_KEY":   key,
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() {
		stopped <- run(ctx, ln, func(k string) string { return env[k] }, slog.New(slog.DiscardHandler))
	}()
	base := "http://" + ln.Addr().String()

	call := func(method, path, body string) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("x-api-key", key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, b
	}

	resp, body := call("GET", "/validate?email=jane@gmail.com", "")
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"status":"LIKELY"`) {
		t.Fatalf("GET /validate: %d %s", resp.StatusCode, body)
	}
	if resp.Header.Get("X-Powered-By") != "custom" {
		t.Error("the host's middleware did not run on the API response")
	}
	if resp, body := call("GET", "/version", ""); resp.StatusCode != 200 || string(body) != "custom 1.0\n" {
		t.Errorf("GET /version: %d %q", resp.StatusCode, body)
	}

	resp, body = call("PUT", "/api/v1/webhook", `{"url":"`+receiver.URL+`/hook"}`)
	var ep struct{ Secret string }
	if err := json.Unmarshal(body, &ep); err != nil || resp.StatusCode/100 != 2 || ep.Secret == "" {
		t.Fatalf("PUT /api/v1/webhook: %d %s", resp.StatusCode, body)
	}
	secret = ep.Secret
	resp, body = call("POST", "/validate/async", `{"emails":["a@gmail.com"]}`)
	var batch struct {
		JobIDs []string `json:"job_ids"`
	}
	if err := json.Unmarshal(body, &batch); err != nil || resp.StatusCode != 202 || len(batch.JobIDs) != 1 {
		t.Fatalf("POST /validate/async: %d %s", resp.StatusCode, body)
	}
	// The job's event and the batch's, in either order.
	var got []string
	for range 2 {
		select {
		case hook := <-hooks:
			got = append(got, string(hook))
		case <-time.After(2 * time.Minute):
			t.Fatalf("%d of 2 webhooks within 2 minutes", len(got))
		}
	}
	slices.Sort(got)
	if !strings.Contains(got[0], `"type":"batch.completed"`) || !strings.Contains(got[1], `"job_id":"`+batch.JobIDs[0]+`"`) {
		t.Errorf("webhooks %s, want the batch's completion and the job's", got)
	}

	cancel()
	select {
	case err := <-stopped:
		if err != nil {
			t.Fatalf("run: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the service did not stop within 30s")
	}
}
