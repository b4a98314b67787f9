package jobs_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/emailcheck/dnstest"
	"github.com/validmail/validmail/jobs"
	"github.com/validmail/validmail/store/memstore"
)

// A DNS outage in the middle of a batch delays its results instead of
// spoiling them: after the DNS comes back every job completes with its
// real status, once, and nothing is refunded.
func TestDNSOutageMidBatch(t *testing.T) {
	t.Parallel()
	const n = 1000
	srv := dnstest.Start(t, nil, &dnstest.Options{Fallback: func(name string) (dnstest.Domain, bool) {
		if strings.HasSuffix(name, ".outage.io") && strings.HasPrefix(name, "d") {
			return dnstest.Domain{MX: []dnstest.MX{{Pref: 10, Host: "mx.sharedhost.net"}}}, true
		}
		return dnstest.Domain{}, false
	}})
	v, err := emailcheck.New(&emailcheck.Config{Nameservers: []string{srv.Addr()}, QueryTimeout: 50 * time.Millisecond, Retries: -1, FailureTTL: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	b := memstore.NewBackend()
	ledger := credits.New(b.Credits, nil)
	ctx := context.Background()
	if _, err := ledger.Grant(ctx, "acct", n, "top-up"); err != nil {
		t.Fatal(err)
	}
	q, err := jobs.NewQueue(b.Jobs, ledger, nil)
	if err != nil {
		t.Fatal(err)
	}
	emails := make([]string, n)
	for i := range emails {
		emails[i] = fmt.Sprintf("user%d@d%d.outage.io", i, i)
	}
	if _, err := q.EnqueueCharged(ctx, jobs.EnqueueChargedParams{AccountID: "acct", Emails: emails}); err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	seen := map[string]int{}
	var done atomic.Int32
	var pool *jobs.Pool
	pool, err = jobs.NewPool(q, v, &jobs.PoolConfig{
		Workers:     8,
		OutageRetry: time.Minute,
		OutagePause: 200 * time.Millisecond,
		OnComplete: func(_ context.Context, j jobs.Job) {
			mu.Lock()
			seen[j.ID]++
			mu.Unlock()
			done.Add(1)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	stopped := make(chan error, 1)
	go func() { stopped <- pool.Run(runCtx) }()
	defer func() { cancel(); <-stopped }()

	waitUntil(t, 30*time.Second, func() bool { return done.Load() >= 200 })
	srv.SetLatency(time.Second) // every query now times out
	atDown := done.Load()
	waitUntil(t, 10*time.Second, pool.DNSDown)
	time.Sleep(1500 * time.Millisecond)
	duringDown := done.Load() - atDown
	srv.SetLatency(0)
	waitUntil(t, 60*time.Second, func() bool { return done.Load() >= n })
	t.Logf("DNS down after %d jobs; %d more completed while it was down (in flight); all %d completed after it came back", atDown, duringDown, n)

	mu.Lock()
	ids := make([]string, 0, len(seen))
	for id := range seen {
		ids = append(ids, id)
	}
	mu.Unlock()
	unknown := 0
	for _, id := range ids {
		j, err := q.Get(ctx, "acct", id)
		if err != nil {
			t.Fatal(err)
		}
		if j.Result == nil || j.Result.Confidence.Status != emailcheck.StatusLikely {
			unknown++
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for id, c := range seen {
		if c != 1 {
			t.Errorf("job %s completed %d times", id, c)
		}
	}
	if len(seen) != n || unknown != 0 {
		t.Fatalf("%d distinct jobs completed, %d not LIKELY; want %d and 0", len(seen), unknown, n)
	}
	if bal, _ := ledger.Balance(ctx, "acct"); bal != 0 {
		t.Fatalf("balance %d, want 0: nothing refunded", bal)
	}
}

func waitUntil(t *testing.T, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %v", d)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
