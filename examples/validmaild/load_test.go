package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/emailcheck/dnstest"
	"github.com/validmail/validmail/httpapi"
	"github.com/validmail/validmail/jobs"
	"github.com/validmail/validmail/store"
	"github.com/validmail/validmail/store/ratelimit"
)

// The load tests are measurements, not checks of behaviour: they run only
// when VALIDMAIL_LOAD is set, and report their figures with t.Log.
//
//	VALIDMAIL_LOAD=1 go test -run TestLoad -v ./examples/validmaild
//
// Every run is bounded by a request count and a duration, and talks to a
// server on loopback only.
func skipUnlessLoad(t *testing.T) {
	if os.Getenv("VALIDMAIL_LOAD") == "" {
		t.Skip("VALIDMAIL_LOAD is not set: skipping the load measurement")
	}
}

// serveLoopback serves h on a loopback port until the test ends and
// returns its base URL.
func serveLoopback(t *testing.T, h http.Handler) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String()
}

// loadResult is what one closed-loop run measured.
type loadResult struct {
	requests int64
	errors   int64
	elapsed  time.Duration
}

func (r loadResult) perSecond() float64 { return float64(r.requests) / r.elapsed.Seconds() }

// hammer sends GET url from conc goroutines, each waiting for its answer
// before the next request, until total requests were sent or d has passed.
// A response other than 200 counts as an error.
func hammer(url, key string, conc, total int, d time.Duration) loadResult {
	tr := &http.Transport{MaxIdleConnsPerHost: conc, MaxConnsPerHost: conc}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	var sent, errs atomic.Int64
	deadline := time.Now().Add(d)
	start := time.Now()
	var wg sync.WaitGroup
	for range conc {
		wg.Go(func() {
			req, _ := http.NewRequest("GET", url, nil)
			if key != "" {
				req.Header.Set("x-api-key", key)
			}
			for sent.Add(1) <= int64(total) && time.Now().Before(deadline) {
				resp, err := c.Do(req)
				if err != nil {
					errs.Add(1)
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					errs.Add(1)
				}
			}
		})
	}
	wg.Wait()
	n := min(sent.Load()-int64(conc), int64(total))
	return loadResult{requests: n, errors: errs.Load(), elapsed: time.Since(start)}
}

// loadAPI builds the API on the store at storeURL with rate limiting off,
// and an account with enough credits for any run; it returns the handler
// and the account's key.
func loadAPI(t *testing.T, storeURL, dnsAddr string) (http.Handler, string) {
	return loadAPIWith(t, storeURL, dnsAddr, false)
}

// loadAPIWith is loadAPI; limited turns on the rate limits of the API's
// default shape, with the backend's limiter (shared on PostgreSQL and
// Redis), at rates a load never reaches, so that every request pays for
// the decision and none is refused.
func loadAPIWith(t *testing.T, storeURL, dnsAddr string, limited bool) (http.Handler, string) {
	ctx := context.Background()
	b, err := openBackend(ctx, storeURL, 0, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	v, err := emailcheck.New(&emailcheck.Config{Nameservers: []string{dnsAddr}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { v.Close() })
	ledger := credits.New(b.Credits, nil)
	queue, err := jobs.NewQueue(b.Jobs, ledger, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := httpapi.Config{RateLimit: ratelimit.Limit{PerSecond: -1}}
	if limited {
		high := ratelimit.Limit{PerSecond: 1e6, Burst: 1e6}
		cfg.RateLimit, cfg.AccountRateLimit, cfg.RateLimiter = high, high, b.Limiter
	}
	h, err := httpapi.NewHandler(v, ledger, queue, b.Accounts, &cfg)
	if err != nil {
		t.Fatal(err)
	}
	acct, err := b.Accounts.CreateAccount(ctx, store.CreateAccountParams{Email: "load@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ledger.Grant(ctx, acct.ID, 100_000_000, ""); err != nil {
		t.Fatal(err)
	}
	_, key, err := b.Accounts.CreateKey(ctx, store.CreateKeyParams{AccountID: acct.ID})
	if err != nil {
		t.Fatal(err)
	}
	return h, key
}

// TestLoadValidate compares GET /validate of an address whose domain is
// cached with a bare net/http hello-world handler, in the same run and
// with the same client.
func TestLoadValidate(t *testing.T) {
	skipUnlessLoad(t)
	const (
		conc  = 32
		total = 200_000
		dur   = 10 * time.Second
	)
	dnsSrv := dnstest.Start(t, zone(), nil)
	api, key := loadAPI(t, "memory", dnsSrv.Addr())
	apiURL := serveLoopback(t, api) + "/validate?email=jane.doe@gmail.com"
	helloURL := serveLoopback(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello, world\n")
	}))

	hammer(apiURL, key, conc, 2000, dur) // fills the DNS cache, warms up
	hammer(helloURL, "", conc, 2000, dur)
	// Alternate the two so that changes in the machine's load affect both.
	var hello, api1 []float64
	for range 3 {
		h := hammer(helloURL, "", conc, total, dur/3)
		a := hammer(apiURL, key, conc, total, dur/3)
		if h.errors > 0 || a.errors > 0 {
			t.Fatalf("errors: hello %d, validate %d", h.errors, a.errors)
		}
		hello = append(hello, h.perSecond())
		api1 = append(api1, a.perSecond())
	}
	hm, am := median(hello), median(api1)
	t.Logf("hello world: %.0f req/s (runs %s)", hm, fmtRates(hello))
	t.Logf("GET /validate, cached domain, memstore: %.0f req/s (runs %s)", am, fmtRates(api1))
	t.Logf("ratio: %.0f%% (target ≥ 60%%)", 100*am/hm)
}

// TestLoadValidateWrk is TestLoadValidate with wrk as the load generator
// (a separate process, lighter than a Go client), when wrk is installed.
func TestLoadValidateWrk(t *testing.T) {
	skipUnlessLoad(t)
	if _, err := exec.LookPath("wrk"); err != nil {
		t.Skip("wrk is not installed: skipping (apt-get install wrk)")
	}
	dnsSrv := dnstest.Start(t, zone(), nil)
	api, key := loadAPI(t, "memory", dnsSrv.Addr())
	apiURL := serveLoopback(t, api) + "/validate?email=jane.doe@gmail.com"
	helloURL := serveLoopback(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello, world\n")
	}))
	wrk := func(url string, args ...string) float64 {
		args = append([]string{"-t2", "-c32", "-d4s"}, append(args, url)...)
		out, err := exec.Command("wrk", args...).CombinedOutput()
		if err != nil {
			t.Fatalf("wrk: %v\n%s", err, out)
		}
		if bytes.Contains(out, []byte("Non-2xx")) {
			t.Fatalf("wrk saw errors:\n%s", out)
		}
		m := regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`).FindSubmatch(out)
		if m == nil {
			t.Fatalf("wrk output:\n%s", out)
		}
		rate, _ := strconv.ParseFloat(string(m[1]), 64)
		return rate
	}
	keyHeader := "x-api-key: " + key
	hammer(apiURL, key, 8, 2000, 5*time.Second) // fills the DNS cache
	var hello, api1 []float64
	for range 3 {
		hello = append(hello, wrk(helloURL))
		api1 = append(api1, wrk(apiURL, "-H", keyHeader))
	}
	hm, am := median(hello), median(api1)
	t.Logf("wrk -t2 -c32 -d4s: hello world %.0f req/s (runs %s)", hm, fmtRates(hello))
	t.Logf("wrk -t2 -c32 -d4s: GET /validate, cached domain, memstore: %.0f req/s (runs %s)", am, fmtRates(api1))
	t.Logf("ratio: %.0f%% (target ≥ 60%%)", 100*am/hm)

	// On the shared backends, with both rate limits decided by the
	// backend: two round trips a request (TestValidateRoundTrips).
	for _, st := range stores()[1:] {
		t.Run(st.name, func(t *testing.T) {
			api, key := loadAPIWith(t, st.fresh(t), dnsSrv.Addr(), true)
			url := serveLoopback(t, api) + "/validate?email=jane.doe@gmail.com"
			hammer(url, key, 8, 2000, 5*time.Second)
			rate := wrk(url, "-H", "x-api-key: "+key)
			t.Logf("wrk -t2 -c32 -d4s: GET /validate, cached domain, %s, rate limits on: %.0f req/s (%.0f%% of hello world)", st.name, rate, 100*rate/hm)
		})
	}
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

func fmtRates(xs []float64) string {
	var b bytes.Buffer
	for i, x := range xs {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%.0f", x)
	}
	return b.String()
}

// TestLoadBatch measures POST /validate/async of 1,000 addresses, one
// request at a time, on memstore and (when VALIDMAIL_TEST_POSTGRES and
// VALIDMAIL_TEST_REDIS are set) pgstore and redisstore, with no workers
// running.
func TestLoadBatch(t *testing.T) {
	skipUnlessLoad(t)
	const rounds = 40
	emails := make([]string, 1000)
	for i := range emails {
		emails[i] = fmt.Sprintf("user%d@gmail.com", i)
	}
	body, _ := json.Marshal(map[string]any{"emails": emails})
	dnsSrv := dnstest.Start(t, zone(), nil)
	for _, st := range stores() {
		t.Run(st.name, func(t *testing.T) {
			api, key := loadAPI(t, st.fresh(t), dnsSrv.Addr())
			url := serveLoopback(t, api) + "/validate/async"
			c := &http.Client{Timeout: 30 * time.Second}
			var lat []time.Duration
			deadline := time.Now().Add(60 * time.Second)
			for i := 0; i < rounds+3 && time.Now().Before(deadline); i++ {
				req, _ := http.NewRequest("POST", url, bytes.NewReader(body))
				req.Header.Set("x-api-key", key)
				req.Header.Set("Content-Type", "application/json")
				start := time.Now()
				resp, err := c.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusAccepted {
					t.Fatalf("POST /validate/async: %d", resp.StatusCode)
				}
				if i >= 3 { // the first requests warm up
					lat = append(lat, time.Since(start))
				}
			}
			slices.Sort(lat)
			t.Logf("POST /validate/async, 1,000 addresses, %s: p50 %v, p90 %v, max %v over %d requests",
				st.name, lat[len(lat)/2].Round(100*time.Microsecond), lat[len(lat)*9/10].Round(100*time.Microsecond),
				lat[len(lat)-1].Round(100*time.Microsecond), len(lat))
		})
	}
}
