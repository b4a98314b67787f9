package service_test

// The open Internet seen by the workers, on memory, PostgreSQL and Redis:
// a domain that never answers holds up no one else's batch and never
// pauses the pool; a true DNS outage delays results without spoiling
// them; a batch's UNKNOWN is the single validation's.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/emailcheck/dnstest"
	"github.com/validmail/validmail/httpapi"
	"github.com/validmail/validmail/httpapi/service"
	"github.com/validmail/validmail/jobs"
	"github.com/validmail/validmail/store/backend"
	"github.com/validmail/validmail/store/memstore"
	"github.com/validmail/validmail/store/pgstore"
	"github.com/validmail/validmail/store/ratelimit"
	"github.com/validmail/validmail/store/redisstore"
)

// backendCase opens a backend of one kind, with storage of its own.
type backendCase struct {
	name string
	open func(t *testing.T) *backend.Backend
}

// everyBackend returns memory, PostgreSQL and Redis; the last two skip
// when their server is not configured.
func everyBackend() []backendCase {
	return []backendCase{
		{"memory", func(*testing.T) *backend.Backend { return memstore.NewBackend() }},
		{"postgres", func(t *testing.T) *backend.Backend {
			u := os.Getenv("VALIDMAIL_TEST_POSTGRES")
			if u == "" {
				t.Skip("VALIDMAIL_TEST_POSTGRES is not set: skipping the PostgreSQL test")
			}
			ns := "out_" + strings.ReplaceAll(uuid.NewString()[:8], "-", "")
			t.Cleanup(func() { dropSchema(t, u, ns) })
			pool, err := pgxpool.New(context.Background(), u)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(pool.Close)
			b, err := pgstore.NewBackend(context.Background(), pool, &pgstore.Config{Schema: ns})
			if err != nil {
				t.Fatal(err)
			}
			return b
		}},
		{"redis", func(t *testing.T) *backend.Backend {
			u := os.Getenv("VALIDMAIL_TEST_REDIS")
			if u == "" {
				t.Skip("VALIDMAIL_TEST_REDIS is not set: skipping the Redis test")
			}
			opt, err := redis.ParseURL(u)
			if err != nil {
				t.Fatal(err)
			}
			client := redis.NewClient(opt)
			prefix := "out-" + uuid.NewString()
			t.Cleanup(func() {
				ctx := context.Background()
				iter := client.Scan(ctx, 0, prefix+"*", 1000).Iterator()
				for iter.Next(ctx) {
					client.Del(ctx, iter.Val())
				}
				client.Close()
			})
			b, err := redisstore.NewBackend(client, &redisstore.Config{Prefix: prefix, Init: true})
			if err != nil {
				t.Fatal(err)
			}
			return b
		}},
	}
}

// outageRig is a running service over a test DNS server.
type outageRig struct {
	svc  *service.Service
	done atomic.Int64 // completions
	mu   sync.Mutex
	seen map[string]int // job id → completions
}

// startRig runs a service of 8 workers on b, resolving with nameserver.
func startRig(t *testing.T, b *backend.Backend, nameserver string, pool jobs.PoolConfig) *outageRig {
	t.Helper()
	rig := &outageRig{seen: map[string]int{}}
	pool.OnComplete = func(_ context.Context, j jobs.Job) {
		rig.mu.Lock()
		rig.seen[j.ID]++
		rig.mu.Unlock()
		rig.done.Add(1)
	}
	svc, err := service.New(b, &service.Config{
		Logger:  slog.New(slog.NewTextHandler(tLogWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Checks:  &emailcheck.Config{Nameservers: []string{nameserver}, QueryTimeout: time.Second},
		Workers: 8,
		Pool:    pool,
		API:     httpapi.Config{RateLimit: ratelimit.Limit{PerSecond: 10000, Burst: 10000}},
	})
	if err != nil {
		t.Fatal(err)
	}
	rig.svc = svc
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- svc.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-stopped; err != nil {
			t.Error(err)
		}
	})
	return rig
}

// account creates an account with credits and returns its id and key.
func (r *outageRig) account(t *testing.T, email string, credits int64) (string, string) {
	t.Helper()
	acct, key, err := service.Bootstrap(context.Background(), r.svc.Backend().Accounts, service.BootstrapParams{Email: email, Credits: credits})
	if err != nil {
		t.Fatal(err)
	}
	return acct.ID, key
}

// call serves one API request and decodes its JSON answer.
func (r *outageRig) call(t *testing.T, method, target, key string, body any) (int, []byte) {
	t.Helper()
	var rd *bytes.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	} else {
		rd = bytes.NewReader(nil)
	}
	req := httptest.NewRequest(method, target, rd)
	req.Header.Set("x-api-key", key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	rec := httptest.NewRecorder()
	apiMux(t, r.svc).ServeHTTP(rec, req)
	return rec.Code, rec.Body.Bytes()
}

// submit posts a batch and returns its id.
func (r *outageRig) submit(t *testing.T, key string, emails []string) string {
	t.Helper()
	code, body := r.call(t, "POST", "/validate/async", key, map[string]any{"emails": emails})
	if code != http.StatusAccepted {
		t.Fatalf("POST /validate/async: %d %s", code, body)
	}
	var m struct {
		BatchID string `json:"batch_id"`
	}
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	return m.BatchID
}

// waitBatch waits until the batch is completed and returns it.
func (r *outageRig) waitBatch(t *testing.T, account, id string, within time.Duration) jobs.Batch {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		b, err := r.svc.Queue().Batch(context.Background(), account, id)
		if err == nil && b.State == jobs.StateCompleted {
			return b
		}
		if time.Now().After(deadline) {
			t.Fatalf("batch %s: %+v, %v; not completed within %v", id, b, err, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// jobsOf returns every job of a batch.
func (r *outageRig) jobsOf(t *testing.T, account, batch string) []jobs.Job {
	t.Helper()
	var all []jobs.Job
	after := ""
	for {
		page, err := r.svc.Queue().BatchJobs(context.Background(), jobs.BatchJobsParams{AccountID: account, BatchID: batch, After: after, Limit: 500})
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, page...)
		if len(page) < 500 {
			return all
		}
		after = page[len(page)-1].ID
	}
}

func (r *outageRig) readyz() (int, string) {
	rec := httptest.NewRecorder()
	r.svc.Mux().ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
	return rec.Code, rec.Body.String()
}

// liveZone answers for "dN.<run>.live.io" with an MX at mx.live.io, and
// never for dead.io.
func liveZone(name string) (dnstest.Domain, bool) {
	switch {
	case name == "dead.io" || strings.HasSuffix(name, ".dead.io"):
		return dnstest.Domain{Drop: true}, true
	case name == "mx.live.io":
		return dnstest.Domain{A: []string{dnstest.DefaultMXAddr}}, true
	case strings.HasSuffix(name, ".live.io"):
		return dnstest.Domain{MX: []dnstest.MX{{Pref: 10, Host: "mx.live.io"}}}, true
	}
	return dnstest.Domain{}, false
}

// Account A submits 50 addresses at a domain whose nameservers never
// answer, then account B submits 1,000 addresses: B's batch completes in
// under twice the time the same batch takes without A's, /readyz stays
// 200 throughout, the pool never pauses, and each of A's 50 completes
// UNKNOWN after exactly its retry budget: three attempts, the second and
// third its retries of an unanswered lookup, here 1 s and then 2 s apart
// (DefaultUnknownBackoff in production: 10 s, then 30 s). B's time
// without A is measured at the same moment on a twin service (its own
// store, DNS server and workers), so that a busy machine slows both
// alike. On memory, A also submits 1,000 addresses at as many such
// domains: A's 3,000 attempts then take CPU of their own (the service
// with A's does four times the twin's validations, a quarter of them
// hanging), so a busy machine slows it more than the twin, and B's batch
// is held to eight times its time alone, plus 5 s; were B's jobs waiting
// behind A's, A's first attempts alone would hold the 8 workers for a
// thousand lookups that never end before their timeouts, far longer.
func TestDeadDomainHoldsUpNoOne(t *testing.T) {
	t.Parallel()
	type variant struct {
		name  string
		bc    backendCase
		dead  int
		apart bool // each dead address at a domain of its own
		times time.Duration
		slack time.Duration
	}
	var variants []variant
	for _, bc := range everyBackend() {
		variants = append(variants, variant{bc.name, bc, 50, false, 2, 2 * time.Second})
	}
	variants = append(variants, variant{"memory/1000 domains", everyBackend()[0], 1000, true, 8, 5 * time.Second})
	for _, vt := range variants {
		bc := vt.bc
		t.Run(vt.name, func(t *testing.T) {
			t.Parallel()
			cfg := jobs.PoolConfig{
				UnknownBackoff: func(failures int) time.Duration { return time.Duration(failures) * time.Second },
			}
			dns := dnstest.Start(t, nil, &dnstest.Options{Latency: 20 * time.Millisecond, Fallback: liveZone})
			rig := startRig(t, bc.open(t), dns.Addr(), cfg)
			twinDNS := dnstest.Start(t, nil, &dnstest.Options{Latency: 20 * time.Millisecond, Fallback: liveZone})
			twin := startRig(t, bc.open(t), twinDNS.Addr(), cfg)
			aID, aKey := rig.account(t, "a@example.org", int64(vt.dead))
			bID, bKey := rig.account(t, "b@example.org", 1000)
			twinID, twinKey := twin.account(t, "b@example.org", 1000)
			emails := make([]string, 1000)
			for i := range emails {
				emails[i] = fmt.Sprintf("user%d@d%d.live.io", i, i)
			}
			dead := make([]string, vt.dead)
			for i := range dead {
				dead[i] = fmt.Sprintf("user%d@dead.io", i)
				if vt.apart {
					dead[i] = fmt.Sprintf("user%d@x%d.dead.io", i, i)
				}
			}

			// /readyz, asked all along.
			stopReady := make(chan struct{})
			var readyWG sync.WaitGroup
			var notReady atomic.Value
			readyWG.Go(func() {
				for {
					if code, body := rig.readyz(); code != 200 {
						notReady.Store(fmt.Sprintf("%d %q", code, body))
					}
					select {
					case <-stopReady:
						return
					case <-time.After(50 * time.Millisecond):
					}
				}
			})

			// A's dead addresses first, then B's batch, and the same batch
			// on the twin at the same moment.
			aBatch := rig.submit(t, aKey, dead)
			var tAlone time.Duration
			var twinWG sync.WaitGroup
			var twinDone jobs.Batch
			twinWG.Go(func() {
				start := time.Now()
				id := twin.submit(t, twinKey, emails)
				twinDone = twin.waitBatch(t, twinID, id, 3*time.Minute)
				tAlone = time.Since(start)
			})
			start := time.Now()
			withA := rig.submit(t, bKey, emails)
			got := rig.waitBatch(t, bID, withA, 3*time.Minute)
			tWithA := time.Since(start)
			twinWG.Wait()
			aDone := rig.waitBatch(t, aID, aBatch, 3*time.Minute)
			close(stopReady)
			readyWG.Wait()

			t.Logf("B's 1,000 after A's %d dead addresses: %v; on the twin without them: %v", vt.dead, tWithA, tAlone)
			if got.Counts[emailcheck.StatusLikely] != 1000 || twinDone.Counts[emailcheck.StatusLikely] != 1000 {
				t.Errorf("B's batch: %v with A's, %v without; want 1000 LIKELY", got.Counts, twinDone.Counts)
			}
			// B's time alone, times vt.times, with a margin for a busy
			// machine.
			if tWithA > vt.times*tAlone+vt.slack {
				t.Errorf("B's batch took %v after A's, %v without: more than %d times as long, plus %v", tWithA, tAlone, vt.times, vt.slack)
			}
			// /readyz pings the nameservers itself: with a thousand
			// queries going unanswered on a busy machine, one ping may be
			// lost too, so only the one-domain case holds it to 200.
			if v := notReady.Load(); v != nil && !vt.apart {
				t.Errorf("/readyz answered %v while a domain of A's did not answer", v)
			}
			if n := rig.svc.Pool().Outages(); n != 0 {
				t.Errorf("the pool paused %d times for a domain of A's", n)
			}
			if aDone.Counts[emailcheck.StatusUnknown] != vt.dead {
				t.Errorf("A's batch: %v, want %d UNKNOWN", aDone.Counts, vt.dead)
			}
			// Each of A's jobs made exactly its three attempts: two failed
			// ones, the latest the second of its unanswered lookups in a
			// row (so neither was a rescue nor an error), then the final
			// one. An attempt put back uncounted would need an outage,
			// and there was none.
			lastRetry := fmt.Sprintf("no nameserver answered for the domain (unjudged attempt %d of %d)", jobs.DefaultUnknownAttempts-1, jobs.DefaultUnknownAttempts)
			aJobs := rig.jobsOf(t, aID, aBatch)
			if len(aJobs) != vt.dead {
				t.Errorf("A's batch has %d jobs, want %d", len(aJobs), vt.dead)
			}
			for _, j := range aJobs {
				if j.Errors != jobs.DefaultUnknownAttempts-1 || j.LastError != lastRetry {
					t.Errorf("A's job %s completed after %d failed attempts, the latest %q; want %d, the latest %q",
						j.ID, j.Errors, j.LastError, jobs.DefaultUnknownAttempts-1, lastRetry)
					break
				}
			}
			if bal, _ := rig.svc.Ledger().Balance(context.Background(), aID); bal != int64(vt.dead) {
				t.Errorf("A's balance %d, want %d: every UNKNOWN refunded", bal, vt.dead)
			}
		})
	}
}

// A 15 s outage (no nameserver answers anything) in the middle of a batch
// at 20 ms a query: every job completes once, with its true verdict, and
// nothing is refunded. "between" starts the outage after 30% of the
// completions; "in flight" starts it from the server at the MX question
// of 30% of the domains, so that MX answers already on their way arrive
// and their hosts' address lookups go unanswered. The batch has 1,000
// jobs on memory, 300 on PostgreSQL and Redis, to spare a busy machine.
func TestOutageMidBatch(t *testing.T) {
	t.Parallel()
	for _, bc := range everyBackend() {
		n := 1000
		if bc.name != "memory" {
			n = 300
		}
		for _, variant := range []string{"between", "in flight"} {
			t.Run(bc.name+"/"+variant, func(t *testing.T) {
				t.Parallel()
				var srv *dnstest.Server
				var mxQuestions atomic.Int64
				began := make(chan struct{})
				srv = dnstest.Start(t, nil, &dnstest.Options{Latency: 20 * time.Millisecond, Fallback: func(name string) (dnstest.Domain, bool) {
					if !strings.HasSuffix(name, ".outage.io") {
						return dnstest.Domain{}, false
					}
					if strings.HasPrefix(name, "mx.") {
						return dnstest.Domain{A: []string{dnstest.DefaultMXAddr}}, true
					}
					if variant == "in flight" && mxQuestions.Add(1) == int64(n*3/10) {
						srv.SetLatency(time.Hour)
						close(began)
					}
					return dnstest.Domain{MX: []dnstest.MX{{Pref: 10, Host: "mx." + name}}}, true
				}})
				rig := startRig(t, bc.open(t), srv.Addr(), jobs.PoolConfig{
					// Past the validator's failure cache (5 s), so that a
					// failure cached during the outage is asked again.
					UnknownBackoff: func(int) time.Duration { return 6 * time.Second },
				})
				id, key := rig.account(t, "o@example.org", int64(n))
				emails := make([]string, n)
				for i := range emails {
					emails[i] = fmt.Sprintf("user%d@d%d.outage.io", i, i)
				}
				batch := rig.submit(t, key, emails)

				if variant == "between" {
					waitCond(t, 2*time.Minute, "30% completed", func() bool { return rig.done.Load() >= int64(n*3/10) })
					srv.SetLatency(time.Hour)
				} else {
					select {
					case <-began:
					case <-time.After(2 * time.Minute):
						t.Fatal("the outage did not begin")
					}
				}
				waitCond(t, time.Minute, "the pool paused", rig.svc.Pool().DNSDown)
				time.Sleep(15 * time.Second) // the outage
				srv.SetLatency(20 * time.Millisecond)
				got := rig.waitBatch(t, id, batch, 3*time.Minute)
				// The pool reports a completion once the store has it.
				waitCond(t, time.Minute, "every completion reported", func() bool { return rig.done.Load() >= int64(n) })

				if got.Counts[emailcheck.StatusLikely] != n {
					t.Errorf("batch after the outage: %v, want %d LIKELY", got.Counts, n)
				}
				rig.mu.Lock()
				for j, c := range rig.seen {
					if c != 1 {
						t.Errorf("job %s completed %d times", j, c)
					}
				}
				if len(rig.seen) != n {
					t.Errorf("%d jobs completed, want %d", len(rig.seen), n)
				}
				rig.mu.Unlock()
				if bal, _ := rig.svc.Ledger().Balance(context.Background(), id); bal != 0 {
					t.Errorf("balance %d, want 0: nothing refunded", bal)
				}
				t.Logf("%d outage(s)", rig.svc.Pool().Outages())
			})
		}
	}
}

func waitCond(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A batch job whose lookups never got an answer completes with the very
// result GET /validate gives for the address in the same situation:
// syntax, domain checks, score 40, did_you_mean, provider, alias and role
// flags. Only meta differs, as it should: meta.source names the job's
// origin ("api_async" for the API's batches, "dashboard" for the
// console's, "api" for the single validation) and meta.latency_ms is each
// validation's own time; the single validation's top-level requestId is
// not part of a job's result. So does a job whose every validation
// failed (each ran out of JobTimeout) until its attempts ran out: its
// result is the validator's UNKNOWN for the address, not a blank one.
func TestBatchUnknownIsTheSingleValidations(t *testing.T) {
	t.Parallel()
	emails := []string{"jane.doe+news@gmai.com", "info@dead.io", "bob@yahoo.con", "x@dead-provider.net"}
	modes := []struct {
		name   string
		pool   jobs.PoolConfig
		errors int // each job's failed attempts
	}{
		{"unanswered", jobs.PoolConfig{
			UnknownBackoff: func(int) time.Duration { return 10 * time.Millisecond },
		}, jobs.DefaultUnknownAttempts - 1},
		{"every attempt fails", jobs.PoolConfig{
			JobTimeout: time.Nanosecond, // every validation ends in an error
			Backoff:    func(int) time.Duration { return 10 * time.Millisecond },
		}, jobs.DefaultMaxAttempts - 1},
	}
	for _, bc := range everyBackend() {
		for _, mode := range modes {
			t.Run(bc.name+"/"+mode.name, func(t *testing.T) {
				t.Parallel()
				testBatchUnknown(t, bc, mode.pool, mode.errors, emails)
			})
		}
	}
}

// testBatchUnknown runs one case of TestBatchUnknownIsTheSingleValidations.
func testBatchUnknown(t *testing.T, bc backendCase, pool jobs.PoolConfig, wantErrors int, emails []string) {
	// Every name but the root's and the canary's random ones (under
	// com, net and org) goes unanswered; the canary's questions are
	// answered.
	dns := dnstest.Start(t, nil, &dnstest.Options{Fallback: func(name string) (dnstest.Domain, bool) {
		return dnstest.Domain{Drop: true}, name != "" && !strings.HasPrefix(name, "canary-")
	}})
	rig := startRig(t, bc.open(t), dns.Addr(), pool)
	acct, key := rig.account(t, "g@example.org", 100)

	single := make([]map[string]any, len(emails))
	for i, e := range emails {
		code, body := rig.call(t, "GET", "/validate?email="+url.QueryEscape(e), key, nil)
		if code != 200 {
			t.Fatalf("GET /validate %s: %d %s", e, code, body)
		}
		single[i] = decode(t, body)
		if single[i]["requestId"] == nil {
			t.Fatalf("GET /validate %s: no requestId", e)
		}
		delete(single[i], "requestId")
		c := single[i]["confidence"].(map[string]any)
		if c["status"] != "UNKNOWN" || single[i]["validations"].(map[string]any)["syntax"] != true {
			t.Fatalf("GET /validate %s: %s; want a syntactically valid UNKNOWN", e, body)
		}
	}
	if single[2]["did_you_mean"] == nil || single[1]["confidence"].(map[string]any)["is_role_based"] != true ||
		single[3]["confidence"].(map[string]any)["confidence_score"] != 40.0 {
		t.Fatalf("the fixture's addresses should get a suggestion, a role and a score of 40: %v", single)
	}

	apiBatch := rig.submit(t, key, emails)
	dashIDs, err := rig.svc.Queue().EnqueueWith(context.Background(), jobs.EnqueueParams{AccountID: acct, Emails: emails, Source: jobs.SourceDashboard})
	if err != nil {
		t.Fatal(err)
	}
	rig.waitBatch(t, acct, apiBatch, 2*time.Minute)
	rig.waitBatch(t, acct, dashIDs[0], 2*time.Minute)
	for k, batch := range []struct {
		id, source string
	}{{apiBatch, "api_async"}, {dashIDs[0], "dashboard"}} {
		for i, j := range rig.jobsOf(t, acct, batch.id) {
			code, body := rig.call(t, "GET", "/validate/status/"+j.ID, key, nil)
			if code != 200 {
				t.Fatalf("GET /validate/status/%s: %d %s", j.ID, code, body)
			}
			if j.Errors != wantErrors {
				t.Errorf("batch %d, %s: completed after %d failed attempts, want %d", k, emails[i], j.Errors, wantErrors)
			}
			res := decode(t, body)["result"].(map[string]any)
			meta := res["meta"].(map[string]any)
			if meta["source"] != batch.source {
				t.Errorf("batch %d, %s: meta.source %v, want %s", k, emails[i], meta["source"], batch.source)
			}
			want := single[i]
			if !sameResult(res, want) {
				a, _ := json.Marshal(res)
				b, _ := json.Marshal(want)
				t.Errorf("batch %d, %s:\njob    %s\nsingle %s", k, emails[i], a, b)
			}
		}
	}
}

func decode(t *testing.T, body []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	return m
}

// sameResult compares two results but for meta.source and
// meta.latency_ms.
func sameResult(a, b map[string]any) bool {
	strip := func(m map[string]any) string {
		c := make(map[string]any, len(m))
		for k, v := range m {
			c[k] = v
		}
		meta := map[string]any{}
		for k, v := range m["meta"].(map[string]any) {
			meta[k] = v
		}
		delete(meta, "source")
		delete(meta, "latency_ms")
		c["meta"] = meta
		out, _ := json.Marshal(c) // maps marshal with sorted keys
		return string(out)
	}
	return strip(a) == strip(b)
}

// tLogWriter writes a service's warnings to the test's log.
type tLogWriter struct{ t *testing.T }

func (w tLogWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}
