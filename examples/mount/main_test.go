package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/validmail/validmail/emailcheck/dnstest"
)

// syncBuffer is a bytes.Buffer safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestMountedAPI(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dns := dnstest.Start(t, dnstest.Zone{"gmail.com": {MX: []dnstest.MX{{Pref: 5, Host: "gmail-smtp-in.l.google.com"}}}}, nil)
	var logs syncBuffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	vm, err := newValidmail(ctx, []string{dns.Addr()}, logger)
	if err != nil {
		t.Fatal(err)
	}
	runDone := make(chan struct{})
	go func() { vm.svc.Run(ctx); close(runDone) }()
	defer func() { cancel(); <-runDone }()

	srv := httptest.NewServer(newApp(logger, vm.svc.Handler()))
	defer srv.Close()

	get := func(path, key string) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequest("GET", srv.URL+path, nil)
		if key != "" {
			req.Header.Set("x-api-key", key)
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp, body
	}

	// The API under the prefix, through the host's middleware.
	resp, body := get("/email/validate?email=jane@gmail.com", vm.key)
	var res struct {
		Email      string
		Confidence struct{ Status string }
		Meta       struct{ Source string }
	}
	if err := json.Unmarshal(body, &res); err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /email/validate: %d %s", resp.StatusCode, body)
	}
	if res.Email != "jane@gmail.com" || res.Confidence.Status != "LIKELY" || res.Meta.Source != "api" {
		t.Errorf("result = %+v", res)
	}
	if resp.Header.Get("X-Frame-Options") != "DENY" {
		t.Errorf("the host's middleware did not run on the API response")
	}
	if !strings.Contains(logs.String(), "path=/email/validate status=200") {
		t.Errorf("the host's access log has no record of the API request:\n%s", logs.String())
	}
	if strings.Contains(logs.String(), vm.key) {
		t.Errorf("the API key appears in the logs")
	}

	// A batch submitted and polled under the prefix.
	req, _ := http.NewRequest("POST", srv.URL+"/email/validate/async", strings.NewReader(`{"emails":["a@gmail.com"]}`))
	req.Header.Set("x-api-key", vm.key)
	req.Header.Set("Content-Type", "application/json")
	presp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var batch struct {
		JobIDs    []string `json:"job_ids"`
		StatusURL string   `json:"status_url"`
	}
	json.NewDecoder(presp.Body).Decode(&batch)
	presp.Body.Close()
	if presp.StatusCode != 202 || len(batch.JobIDs) != 1 {
		t.Fatalf("POST /email/validate/async: %d %v", presp.StatusCode, batch)
	}
	// The status URL names the prefix the host mounted the API at.
	if batch.StatusURL != "/email/validate/status/{job_id}" {
		t.Fatalf("status_url %q, want it under /email", batch.StatusURL)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		_, body := get(strings.ReplaceAll(batch.StatusURL, "{job_id}", batch.JobIDs[0]), vm.key)
		if bytes.Contains(body, []byte(`"completed"`)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("job not completed: %s", body)
		}
	}

	// Errors, the OpenAPI document and the host's own routes still work.
	if resp, _ := get("/email/validate?email=jane@gmail.com", ""); resp.StatusCode != 401 {
		t.Errorf("without a key: %d, want 401", resp.StatusCode)
	}
	if resp, _ := get("/email/openapi.json", ""); resp.StatusCode != 200 {
		t.Errorf("GET /email/openapi.json: %d", resp.StatusCode)
	}
	if resp, body := get("/hello", ""); resp.StatusCode != 200 || !strings.Contains(string(body), "host application") {
		t.Errorf("GET /hello: %d %s", resp.StatusCode, body)
	}
	if resp, _ := get("/validate?email=jane@gmail.com", vm.key); resp.StatusCode != 404 {
		t.Errorf("the API answered outside its prefix: %d", resp.StatusCode)
	}
}
