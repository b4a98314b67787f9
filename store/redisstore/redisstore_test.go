package redisstore_test

import (
	"context"
	"errors"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/jobs"
	"github.com/validmail/validmail/jobs/jobsdriver"
	"github.com/validmail/validmail/jobs/jobtype"
	"github.com/validmail/validmail/store"
	"github.com/validmail/validmail/store/redisstore"
	"github.com/validmail/validmail/webhook"
	"github.com/validmail/validmail/webhook/jobevents"
)

func TestNewRejectsBadConfig(t *testing.T) {
	t.Parallel()
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer c.Close()
	for _, cfg := range []*redisstore.Config{
		{Prefix: "a{b"},
		{Prefix: "a}b"},
		{Retention: -time.Second},
		{Retention: time.Microsecond},
	} {
		if _, err := redisstore.New(c, cfg); err == nil {
			t.Errorf("New(%+v) succeeded", *cfg)
		}
	}
	if _, err := redisstore.New(nil, nil); err == nil {
		t.Error("New(nil) succeeded")
	}
	if _, err := redisstore.New(c, nil); err != nil {
		t.Errorf("New with the defaults: %v", err)
	}
}

// TestWrongType puts a key of the wrong type where a method expects
// another, and checks that the method fails with ErrBadData and writes
// nothing.
func TestWrongType(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tt := range []struct {
		name string
		key  string // the key to spoil, after the prefix
		call func(s *redisstore.Store, acct string) error
	}{
		{"Balance", "bal:A", func(s *redisstore.Store, acct string) error {
			_, err := s.Balance(ctx, acct)
			return err
		}},
		{"ApplyHistory", "hist:A", func(s *redisstore.Store, acct string) error {
			_, err := s.Apply(ctx, credits.Change{AccountID: acct, Delta: 5, Reason: credits.ReasonGrant})
			return err
		}},
		{"ApplyIdempotency", "idem:A", func(s *redisstore.Store, acct string) error {
			_, err := s.Apply(ctx, credits.Change{AccountID: acct, Delta: 5, Reason: credits.ReasonGrant, IdempotencyKey: "k"})
			return err
		}},
		{"ApplyTotals", "ctot:A", func(s *redisstore.Store, acct string) error {
			_, err := s.Apply(ctx, credits.Change{AccountID: acct, Delta: 5, Reason: credits.ReasonGrant})
			return err
		}},
		{"HistoryPage", "hist:A", func(s *redisstore.Store, acct string) error {
			_, err := s.HistoryPage(ctx, credits.PageParams{AccountID: acct, Limit: 5})
			return err
		}},
		{"Totals", "ctot:A", func(s *redisstore.Store, acct string) error {
			_, err := s.Totals(ctx, credits.TotalsParams{AccountID: acct, From: time.Now(), To: time.Now().AddDate(0, 0, 1)})
			return err
		}},
		{"EnqueueReady", "rq:A", func(s *redisstore.Store, acct string) error {
			_, err := s.Enqueue(ctx, jobtype.EnqueueParams{AccountID: acct, Emails: []string{"a@example.org"}})
			return err
		}},
		{"EnqueueJobKey", "job:" + redisstore.FirstJobID("A"), func(s *redisstore.Store, acct string) error {
			_, err := s.Enqueue(ctx, jobtype.EnqueueParams{AccountID: acct, Emails: []string{"a@example.org"}})
			return err
		}},
		{"EnqueueChargedBatches", "idk:A:k", func(s *redisstore.Store, acct string) error {
			_, err := s.EnqueueCharged(ctx, jobtype.EnqueueChargedParams{AccountID: acct, Emails: []string{"a@example.org"}, IdempotencyKey: "k"})
			return err
		}},
		{"LeaseLeases", "leases", func(s *redisstore.Store, acct string) error {
			_, err := s.Lease(ctx, jobsdriver.LeaseParams{Max: 1, Duration: time.Second})
			return err
		}},
		{"GetJob", "job:7", func(s *redisstore.Store, acct string) error {
			_, err := s.Get(ctx, acct, "7")
			return err
		}},
		{"CreateAccountEmails", "emails", func(s *redisstore.Store, acct string) error {
			_, err := s.CreateAccount(ctx, store.CreateAccountParams{Email: "x@example.org"})
			return err
		}},
		{"AuthenticateIndex", "keyhash", func(s *redisstore.Store, acct string) error {
			_, err := s.Authenticate(ctx, store.NewSecret())
			return err
		}},
		{"WebhookDeliveries", "wh:acct:A", func(s *redisstore.Store, acct string) error {
			_, err := s.Backend().Outbox.(*redisstore.Webhooks).Deliveries(ctx, webhook.ListParams{AccountID: acct})
			return err
		}},
		{"WebhookEnqueue", "wh:due", func(s *redisstore.Store, acct string) error {
			return s.Backend().Outbox.(*redisstore.Webhooks).Enqueue(ctx, webhook.Event{ID: "msg_1", AccountID: acct, Payload: []byte("{}")})
		}},
		{"WebhookLease", "wh:due", func(s *redisstore.Store, acct string) error {
			_, err := s.Backend().Outbox.(*redisstore.Webhooks).Lease(ctx, webhook.LeaseParams{Now: time.Now(), Limit: 1, Duration: time.Minute})
			return err
		}},
		{"WebhookEndpoint", "wh:ep:A", func(s *redisstore.Store, acct string) error {
			_, _, err := s.Backend().Outbox.(*redisstore.Webhooks).PutEndpoint(ctx, webhook.PutEndpointParams{AccountID: acct, URL: "https://example.org/", Secret: webhook.NewSecret(), Now: time.Now()})
			return err
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, c, prefix := setup(t, nil)
			// The marker key is written at setup, before any call.
			if err := s.Setup(ctx); err != nil {
				t.Fatal(err)
			}
			acct := "A"
			if err := c.Set(ctx, redisstore.KeyOf(s, acct, tt.key), "not what you expect", 0).Err(); err != nil {
				t.Fatal(err)
			}
			if tt.name == "LeaseLeases" {
				// A job to lease, so that the lease script runs.
				if _, err := s.Enqueue(ctx, jobtype.EnqueueParams{AccountID: acct, Emails: []string{"a@example.org"}}); err != nil {
					t.Fatal(err)
				}
			}
			if tt.name == "EnqueueChargedBatches" {
				// Funds, so that only the wrong type can refuse the batch.
				if _, err := s.Apply(ctx, credits.Change{AccountID: acct, Delta: 5, Reason: credits.ReasonGrant}); err != nil {
					t.Fatal(err)
				}
			}
			before := keyCount(t, c, prefix)
			err := tt.call(s, acct)
			if !errors.Is(err, redisstore.ErrBadData) {
				t.Fatalf("got %v, want ErrBadData", err)
			}
			if after := keyCount(t, c, prefix); after != before {
				t.Fatalf("a failed call changed the key count from %d to %d", before, after)
			}
		})
	}
}

// TestWrongTypeCompleteWritesNothing spoils the webhook delivery index of
// a job's account and checks that completing the job fails whole: the job stays leased and
// can be completed once the outbox is repaired.
func TestWrongTypeCompleteWritesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, c, _ := setup(t, nil)
	if _, err := s.Enqueue(ctx, jobtype.EnqueueParams{AccountID: "A", Emails: []string{"a@example.org"}, Cost: 1}); err != nil {
		t.Fatal(err)
	}
	ls, err := s.Lease(ctx, jobsdriver.LeaseParams{Max: 1, Duration: time.Minute})
	if err != nil || len(ls) != 1 {
		t.Fatalf("lease: %v, %v", ls, err)
	}
	outbox := redisstore.KeyOf(s, "A", "wh:acct:A")
	c.Set(ctx, outbox, "x", 0)
	cp := jobsdriver.CompleteParams{ID: ls[0].ID, Token: ls[0].Token, Result: jobs.UnknownResult("a@example.org"), Refund: 1,
		Event: &webhook.Event{ID: "ev1", Payload: []byte(`{}`)}}
	if err := s.Complete(ctx, cp); !errors.Is(err, redisstore.ErrBadData) {
		t.Fatalf("complete with a spoiled outbox: %v, want ErrBadData", err)
	}
	if bal, _ := s.Balance(ctx, "A"); bal != 0 {
		t.Fatalf("a failed completion refunded: balance %d", bal)
	}
	if j, err := s.Get(ctx, "A", ls[0].ID); err != nil || j.State != jobtype.StateActive {
		t.Fatalf("job after a failed completion: %+v, %v", j, err)
	}
	c.Del(ctx, outbox)
	if err := s.Complete(ctx, cp); err != nil {
		t.Fatalf("complete after repair: %v", err)
	}
	evs, err := jobevents.List(ctx, s.Backend().Outbox.(*redisstore.Webhooks), "A")
	if err != nil || len(evs) != 1 || evs[0].ID != "ev1" || string(evs[0].Payload) != "{}" {
		t.Fatalf("outbox %+v, %v", evs, err)
	}
	if bal, _ := s.Balance(ctx, "A"); bal != 1 {
		t.Fatalf("balance after the refund: %d, want 1", bal)
	}
}

func keyCount(t *testing.T, c *redis.Client, prefix string) int {
	t.Helper()
	return len(scanKeys(t, c, prefix))
}

func scanKeys(t *testing.T, c *redis.Client, prefix string) []string {
	t.Helper()
	ctx := context.Background()
	var out []string
	iter := c.Scan(ctx, 0, "{"+prefix+"[}:]*", 1000).Iterator()
	for iter.Next(ctx) {
		out = append(out, iter.Val())
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestSecretNeverStored searches every key and value under the prefix for
// a key's secret, reading each key by its type and by DUMP.
func TestSecretNeverStored(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, c, prefix := setup(t, nil)
	a, err := s.CreateAccount(ctx, store.CreateAccountParams{Email: "owner@example.org"})
	if err != nil {
		t.Fatal(err)
	}
	k, secret, err := s.CreateKey(ctx, store.CreateKeyParams{AccountID: a.ID, Name: "ci"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Authenticate(ctx, secret); err != nil {
		t.Fatal(err)
	}
	body := strings.TrimPrefix(secret, store.SecretPrefix)
	var all strings.Builder
	for _, key := range scanKeys(t, c, prefix) {
		all.WriteString(key + "\n")
		d, err := c.Dump(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		all.WriteString(d + "\n")
		switch c.Type(ctx, key).Val() {
		case "string":
			all.WriteString(c.Get(ctx, key).Val())
		case "hash":
			for f, v := range c.HGetAll(ctx, key).Val() {
				all.WriteString(f + "=" + v + "\n")
			}
		case "list":
			all.WriteString(strings.Join(c.LRange(ctx, key, 0, -1).Val(), "\n"))
		case "zset":
			all.WriteString(strings.Join(c.ZRange(ctx, key, 0, -1).Val(), "\n"))
		default:
			t.Fatalf("key %s of unexpected type", key)
		}
	}
	dump, err := s.Dump(ctx)
	if err != nil {
		t.Fatal(err)
	}
	all.Write(dump)
	data := all.String()
	// The search can find things: the hash and the display prefix are there.
	if !strings.Contains(data, k.Hash) || !strings.Contains(data, k.Prefix) {
		t.Fatal("the key's hash or display prefix is not in the data: the search is broken")
	}
	for _, needle := range []string{secret, body, body[:16], body[len(body)-16:]} {
		if strings.Contains(data, needle) {
			t.Fatalf("the data under the prefix contains the secret (%q)", needle)
		}
	}
}

// TestNotifierLatency measures the time from an enqueue to the wake-up of a
// subscriber.
func TestNotifierLatency(t *testing.T) {
	t.Parallel()
	s, c, prefix := setup(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	ch, err := s.Subscribe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const rounds = 20
	var lat []time.Duration
	for range rounds {
		start := time.Now()
		if _, err := s.Enqueue(ctx, jobtype.EnqueueParams{AccountID: "A", Emails: []string{"a@example.org"}}); err != nil {
			t.Fatal(err)
		}
		select {
		case <-ch:
			lat = append(lat, time.Since(start))
		case <-time.After(30 * time.Second):
			t.Fatal("no wake-up within 30 s of an enqueue")
		}
	}
	// A subscription has no timer: every wake-up came from an enqueue.
	// The latency is logged, not asserted (a loaded machine stretches it).
	slices.Sort(lat)
	t.Logf("wake-up after enqueue: median %v, max %v", lat[rounds/2], lat[rounds-1])
	// Ending the context ends the subscription.
	cancel()
	ch2 := "{" + prefix + "}notify"
	deadline := time.Now().Add(2 * time.Second)
	for {
		n := c.PubSubNumSub(context.Background(), ch2).Val()[ch2]
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d subscribers left after the context ended", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestRetentionExpiresResults checks that a completed job disappears after
// the retention, by the key's TTL alone.
func TestRetentionExpiresResults(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, c, _ := setup(t, &redisstore.Config{Retention: 100 * time.Millisecond})
	ids, err := s.Enqueue(ctx, jobtype.EnqueueParams{AccountID: "A", Emails: []string{"a@example.org"}})
	if err != nil {
		t.Fatal(err)
	}
	ls, err := s.Lease(ctx, jobsdriver.LeaseParams{Max: 1, Duration: time.Minute})
	if err != nil || len(ls) != 1 {
		t.Fatalf("lease: %v, %v", ls, err)
	}
	res := emailcheck.Result{Email: "a@example.org", MXHosts: []string{"mx.example.org"}}
	res.Confidence.Status = emailcheck.StatusLikely
	if err := s.Complete(ctx, jobsdriver.CompleteParams{ID: ids[0], Token: ls[0].Token, Result: res}); err != nil {
		t.Fatal(err)
	}
	j, err := s.Get(ctx, "A", ids[0])
	if err != nil || j.State != jobtype.StateCompleted || j.Result == nil || j.Result.MXHosts[0] != "mx.example.org" {
		t.Fatalf("completed job: %+v, %v", j, err)
	}
	time.Sleep(300 * time.Millisecond)
	if _, err := s.Get(ctx, "A", ids[0]); !errors.Is(err, jobtype.ErrNotFound) {
		t.Fatalf("job past its retention: %v, want ErrNotFound", err)
	}
	// Its batch goes with it, from the account's list too.
	if _, err := s.Batch(ctx, "A", ids[0]); !errors.Is(err, jobtype.ErrNotFound) {
		t.Fatalf("batch past its retention: %v, want ErrNotFound", err)
	}
	if bs, err := s.Batches(ctx, jobtype.BatchesParams{AccountID: "A", Limit: 10}); err != nil || len(bs) != 0 {
		t.Fatalf("batches past their retention: %v, %v", bs, err)
	}
	if n, err := c.Exists(ctx, redisstore.KeyOf(s, "A", "bt:"+ids[0]), redisstore.KeyOf(s, "A", "batches:A")).Result(); err != nil || n != 0 {
		t.Fatalf("%d batch keys left past the retention (%v)", n, err)
	}
	// Cleanup forgets it too.
	if _, err := s.Cleanup(ctx, jobsdriver.CleanupParams{CompletedBefore: time.Now()}); err != nil {
		t.Fatal(err)
	}
}

// TestServerGoneAway runs calls through a proxy that is then closed, and
// against a port nobody listens on.
func TestServerGoneAway(t *testing.T) {
	t.Parallel()
	real := client(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", real.Options().Addr)
			if err != nil {
				in.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, in, out)
			mu.Unlock()
			go func() { io.Copy(out, in); out.Close() }()
			go func() { io.Copy(in, out); in.Close() }()
		}
	}()
	// The same database, credentials and protocol as the real client:
	// only the address differs.
	opts := *real.Options()
	opts.Addr, opts.MaxRetries, opts.DialTimeout = ln.Addr().String(), -1, time.Second
	c := redis.NewClient(&opts)
	defer c.Close()
	s, _, prefix := setup(t, nil)
	s2, err := redisstore.New(c, &redisstore.Config{Prefix: prefix, Init: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := s2.Apply(ctx, credits.Change{AccountID: "A", Delta: 3, Reason: credits.ReasonGrant}); err != nil {
		t.Fatalf("through the proxy: %v", err)
	}
	// The server goes away.
	ln.Close()
	mu.Lock()
	for _, c := range conns {
		c.Close()
	}
	mu.Unlock()
	for name, call := range map[string]func() error{
		"Apply": func() error {
			_, err := s2.Apply(ctx, credits.Change{AccountID: "A", Delta: -1, Reason: credits.ReasonCharge})
			return err
		},
		"Balance": func() error { _, err := s2.Balance(ctx, "A"); return err },
		"Lease": func() error {
			_, err := s2.Lease(ctx, jobsdriver.LeaseParams{Max: 1, Duration: time.Second})
			return err
		},
		"Authenticate": func() error { _, err := s2.Authenticate(ctx, store.NewSecret()); return err },
		"Subscribe":    func() error { _, err := s2.Subscribe(ctx); return err },
	} {
		if err := call(); !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("%s with the server gone: %v, want ErrUnavailable", name, err)
		}
	}
	// What was acknowledged is there.
	if bal, err := s.Balance(ctx, "A"); err != nil || bal != 3 {
		t.Fatalf("balance after the outage: %d, %v; want 3", bal, err)
	}
}

func TestContextEndedChangesNothing(t *testing.T) {
	t.Parallel()
	s, _, _ := setup(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := s.CreateAccount(ctx, store.CreateAccountParams{Email: "a@example.org"})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("CreateAccount with a canceled context: %v", err)
	}
	if _, err := s.GetAccountByEmail(context.Background(), "a@example.org"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("account after a canceled create: %v, want ErrNotFound", err)
	}
}

// TestNotifierWakesAfterReconnect checks that a subscription that lost its
// connection wakes the workers once go-redis has subscribed again: jobs
// published while it was away would otherwise wait for the next poll.
func TestNotifierWakesAfterReconnect(t *testing.T) {
	base := client(t) // skips without a server
	opts := *base.Options()
	opts.ClientName = "vmtest-reconnect-" + uuid.NewString()
	c := redis.NewClient(&opts)
	t.Cleanup(func() { c.Close() })
	s, err := redisstore.New(c, &redisstore.Config{Prefix: "vmtest-" + uuid.NewString(), Init: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := s.Subscribe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-ch:
		t.Fatal("woken before anything happened")
	case <-time.After(50 * time.Millisecond):
	}
	// Kill only this test's subscriber connection, found by its name.
	list, err := base.ClientList(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	id := ""
	for _, line := range strings.Split(list, "\n") {
		if strings.Contains(line, "name="+opts.ClientName+" ") && strings.Contains(line, "sub=1") {
			for _, f := range strings.Fields(line) {
				if v, ok := strings.CutPrefix(f, "id="); ok {
					id = v
				}
			}
		}
	}
	if id == "" {
		t.Fatalf("no subscriber connection named %s in CLIENT LIST", opts.ClientName)
	}
	if err := base.Do(ctx, "CLIENT", "KILL", "ID", id).Err(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		t.Fatal("no wake-up after the subscription was restored")
	}
}

// A completion that carries the queue's retention is kept that long, not
// the store's default: one retention setting for the deployment.
func TestCompletionCarriesRetention(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, c, _ := setup(t, nil) // the store's default: 7 days
	ids, err := s.Enqueue(ctx, jobtype.EnqueueParams{AccountID: "A", Emails: []string{"a@example.org"}})
	if err != nil {
		t.Fatal(err)
	}
	ls, err := s.Lease(ctx, jobsdriver.LeaseParams{Max: 1, Duration: time.Minute})
	if err != nil || len(ls) != 1 {
		t.Fatalf("lease: %v, %v", ls, err)
	}
	res := emailcheck.Result{Email: "a@example.org"}
	res.Confidence.Status = emailcheck.StatusLikely
	if err := s.Complete(ctx, jobsdriver.CompleteParams{ID: ids[0], Token: ls[0].Token, Result: res, Retention: time.Hour}); err != nil {
		t.Fatal(err)
	}
	ttl, err := c.PTTL(ctx, redisstore.KeyOf(s, "A", "job:"+ids[0])).Result()
	if err != nil || ttl <= 59*time.Minute || ttl > time.Hour {
		t.Fatalf("the completed job's TTL %v (%v), want the hour the queue asked for", ttl, err)
	}
}
