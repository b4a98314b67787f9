package httpapi_test

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/httpapi"
	"github.com/validmail/validmail/jobs"
	"github.com/validmail/validmail/store"
	"github.com/validmail/validmail/store/ratelimit"
)

// submit posts a batch and returns its id and job ids.
func submit(t *testing.T, f *fixture, key string, emails ...string) (string, []string) {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"emails": emails})
	resp := f.do(t, req{method: "POST", target: "/validate/async", key: key, body: string(b)})
	m := resp.JSON(t)
	if resp.Code != http.StatusAccepted {
		t.Fatalf("POST /validate/async: %d %s", resp.Code, resp.Body)
	}
	var ids []string
	for _, id := range m["job_ids"].([]any) {
		ids = append(ids, id.(string))
	}
	if m["batch_id"] != ids[0] {
		t.Fatalf("batch_id %v, want the first job's id %s", m["batch_id"], ids[0])
	}
	return ids[0], ids
}

func TestBatchResource(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	older, _ := submit(t, f, f.key, "a@good.com")
	id, ids := submit(t, f, f.key, "jane@good.com", "=HYPERLINK@good.com", "nope", "x@servfail.com", "bob@other.com")

	resp := f.do(t, req{method: "GET", target: "/api/v1/batches/" + id, key: f.key})
	m := resp.JSON(t)
	if resp.Code != 200 || m["state"] != "active" || m["total"] != 5.0 || m["completed"] != 0.0 || m["completed_at"] != nil || m["source"] != "api" {
		t.Fatalf("new batch: %d %s", resp.Code, resp.Body)
	}
	f.runPool(t)
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp = f.do(t, req{method: "GET", target: "/api/v1/batches/" + id, key: f.key})
		m = resp.JSON(t)
		if m["state"] == "completed" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("batch not completed: %s", resp.Body)
		}
		time.Sleep(10 * time.Millisecond)
	}
	counts := m["counts"].(map[string]any)
	if m["completed"] != 5.0 || m["completed_at"] == nil || counts["LIKELY"] != 3.0 || counts["INVALID_FORMAT"] != 1.0 || counts["UNKNOWN"] != 1.0 {
		t.Fatalf("completed batch: %s", resp.Body)
	}

	// Another account's batch, an unknown id: the same 404.
	_, otherKey := f.newAccount(t, "other@good.com", 0, store.SignupPermissions())
	for _, key := range []string{otherKey} {
		resp = f.do(t, req{method: "GET", target: "/api/v1/batches/" + id, key: key})
		wantProblem(t, resp, http.StatusNotFound, "batch_not_found")
		resp = f.do(t, req{method: "GET", target: "/api/v1/batches/" + id + "/results", key: key})
		wantProblem(t, resp, http.StatusNotFound, "batch_not_found")
	}
	resp = f.do(t, req{method: "GET", target: "/api/v1/batches/99999999", key: f.key})
	wantProblem(t, resp, http.StatusNotFound, "batch_not_found")

	// The list, newest first, paged.
	resp = f.do(t, req{method: "GET", target: "/api/v1/batches?limit=1", key: f.key})
	m = resp.JSON(t)
	bs := m["batches"].([]any)
	if len(bs) != 1 || bs[0].(map[string]any)["batch_id"] != id || m["next_cursor"] == nil {
		t.Fatalf("first page: %s", resp.Body)
	}
	resp = f.do(t, req{method: "GET", target: "/api/v1/batches?limit=1&cursor=" + url.QueryEscape(m["next_cursor"].(string)), key: f.key})
	m = resp.JSON(t)
	bs = m["batches"].([]any)
	if len(bs) != 1 || bs[0].(map[string]any)["batch_id"] != older || m["next_cursor"] != nil {
		t.Fatalf("last page: %s", resp.Body)
	}

	// Results as JSON pages, in submission order, every row once.
	var seen []string
	target := "/api/v1/batches/" + id + "/results?limit=2"
	for range 10 {
		resp = f.do(t, req{method: "GET", target: target, key: f.key})
		m = resp.JSON(t)
		for _, r := range m["results"].([]any) {
			seen = append(seen, r.(map[string]any)["job_id"].(string))
		}
		next, _ := m["next_cursor"].(string)
		if next == "" {
			break
		}
		target = "/api/v1/batches/" + id + "/results?limit=2&cursor=" + url.QueryEscape(next)
	}
	if strings.Join(seen, ",") != strings.Join(ids, ",") {
		t.Fatalf("paged results %v, want %v", seen, ids)
	}
	resp = f.do(t, req{method: "GET", target: "/api/v1/batches/" + id + "/results?status=LIKELY", key: f.key})
	if rs := resp.JSON(t)["results"].([]any); len(rs) != 3 {
		t.Fatalf("LIKELY filter: %s", resp.Body)
	}

	// CSV, escaped against formulas; JSON Lines.
	resp = f.do(t, req{method: "GET", target: "/api/v1/batches/" + id + "/results", key: f.key, header: map[string]string{"Accept": "text/csv"}})
	rows, err := csv.NewReader(strings.NewReader(string(resp.Body))).ReadAll()
	if err != nil || resp.Code != 200 || len(rows) != 6 || rows[0][0] != "job_id" || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/csv") {
		t.Fatalf("CSV: %d %v %q", resp.Code, err, resp.Body)
	}
	if rows[2][1] != "'=HYPERLINK@good.com" {
		t.Errorf("a formula-like cell was not escaped: %q", rows[2][1])
	}
	resp = f.do(t, req{method: "GET", target: "/api/v1/batches/" + id + "/results?format=jsonl&status=INVALID_FORMAT", key: f.key})
	lines := strings.Split(strings.TrimSpace(string(resp.Body)), "\n")
	if resp.Code != 200 || len(lines) != 1 || !strings.Contains(lines[0], `"email":"nope"`) {
		t.Fatalf("JSON Lines: %d %q", resp.Code, resp.Body)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/x-ndjson; charset=utf-8" {
		t.Fatalf("JSON Lines served as %q", ct)
	}
	accepted := f.do(t, req{method: "GET", target: "/api/v1/batches/" + id + "/results?status=INVALID_FORMAT", key: f.key, header: map[string]string{"Accept": "application/x-ndjson"}})
	if accepted.Code != 200 || string(accepted.Body) != string(resp.Body) || accepted.Header.Get("Content-Type") != resp.Header.Get("Content-Type") {
		t.Fatalf("Accept: application/x-ndjson: %d %q %q", accepted.Code, accepted.Header.Get("Content-Type"), accepted.Body)
	}
}

// Polling draws from its own bucket: a key that spent its validation
// rate can still poll, and polls leave validations their rate.
func TestReadsHaveTheirOwnLimit(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	h, err := httpapi.NewHandler(f.v, f.ledger, f.queue, f.st, &httpapi.Config{RateLimit: ratelimit.Limit{PerSecond: 0.01, Burst: 2}})
	if err != nil {
		t.Fatal(err)
	}
	id, _ := submit(t, f, f.key, "a@good.com")
	for i := range 15 {
		if resp := f.do(t, req{method: "GET", target: "/api/v1/batches/" + id, key: f.key, handler: h}); resp.Code != 200 {
			t.Fatalf("poll %d: %d", i+1, resp.Code)
		}
	}
	for i := range 2 {
		if resp := f.do(t, req{method: "GET", target: "/validate?email=a@good.com", key: f.key, handler: h}); resp.Code != 200 {
			t.Fatalf("validation %d after 15 polls: %d", i+1, resp.Code)
		}
	}
	if resp := f.do(t, req{method: "GET", target: "/validate?email=a@good.com", key: f.key, handler: h}); resp.Code != http.StatusTooManyRequests {
		t.Fatalf("third validation: %d, want 429 (the validation burst is 2)", resp.Code)
	}
	if resp := f.do(t, req{method: "GET", target: "/validate/status/" + id, key: f.key, handler: h}); resp.Code != 200 {
		t.Fatalf("status poll after the validations' 429: %d", resp.Code)
	}
}

// slowValidator takes 2 ms longer than the validator it wraps.
type slowValidator struct{ v jobs.Validator }

func (s slowValidator) Validate(ctx context.Context, email string, opts ...emailcheck.CallOption) (emailcheck.Result, error) {
	time.Sleep(2 * time.Millisecond)
	return s.v.Validate(ctx, email, opts...)
}

// TestPollingDoesNotStarveValidations submits 10 batches of 1,000 with one
// key and follows each by polling its batch twenty times a second, while the
// same key keeps calling GET /validate just under its limit: no poll is
// answered 429, and no validation is refused.
func TestPollingDoesNotStarveValidations(t *testing.T) {
	const (
		batches = 10
		size    = 400
		rate    = 50 // the default validation limit per key
	)
	f := setup(t, &options{credits: batches*size + 1000, limit: ratelimit.Limit{PerSecond: rate, Burst: rate}})
	// Workers slowed to at most 2,000 jobs a second, so the batches take
	// seconds (more on a loaded machine: the wait below is a safety net,
	// not a measure) and the polls (200 a second, four times the validation
	// limit) would starve the validations if they shared a bucket.
	pool, err := jobs.NewPool(f.queue, slowValidator{f.v}, &jobs.PoolConfig{Workers: 4, PollInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	pctx, pstop := context.WithCancel(context.Background())
	pdone := make(chan struct{})
	go func() { defer close(pdone); pool.Run(pctx) }()
	defer func() { pstop(); <-pdone }()

	ctx, stop := context.WithCancel(t.Context())
	defer stop()
	var validations, refused atomic.Int64
	validating := make(chan struct{})
	go func() {
		defer close(validating)
		// Paced at 80% of the limit, so that the 10 submissions, which
		// draw from the same bucket, always find room.
		tick := time.NewTicker(time.Second / (rate * 8 / 10))
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			resp := f.do(t, req{method: "GET", target: "/validate?email=v@good.com", key: f.key})
			validations.Add(1)
			if resp.Code != http.StatusOK {
				refused.Add(1)
			}
		}
	}()

	ids := make([]string, batches)
	for i := range ids {
		emails := make([]string, size)
		for j := range emails {
			emails[j] = fmt.Sprintf("u%d.%d@good.com", i, j)
		}
		ids[i], _ = submit(t, f, f.key, emails...)
	}
	start := time.Now()
	var polls, limited atomic.Int64
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Go(func() {
			for time.Since(start) < 10*time.Minute {
				resp := f.do(t, req{method: "GET", target: "/api/v1/batches/" + id, key: f.key})
				polls.Add(1)
				if resp.Code == http.StatusTooManyRequests {
					limited.Add(1)
				} else if resp.Code == http.StatusOK && resp.JSON(t)["state"] == "completed" {
					return
				}
				time.Sleep(50 * time.Millisecond)
			}
			t.Errorf("batch %s not completed within 10 minutes", id)
		})
	}
	wg.Wait()
	// Keep validating a little after the last poll: refusals would show.
	time.Sleep(500 * time.Millisecond)
	stop()
	<-validating
	t.Logf("%d batches of %d completed in %v: %d polls (%d answered 429), %d validations (%d refused)",
		batches, size, time.Since(start).Round(time.Millisecond), polls.Load(), limited.Load(), validations.Load(), refused.Load())
	if limited.Load() != 0 || refused.Load() != 0 {
		t.Fatalf("%d polls answered 429, %d validations refused; want none", limited.Load(), refused.Load())
	}
	if validations.Load() == 0 || polls.Load() < batches {
		t.Fatalf("%d validations, %d polls: the test did not run", validations.Load(), polls.Load())
	}
}
