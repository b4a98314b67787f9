package redisstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
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
)

// The store that testdata/layout1.json holds, as the previous layout (every
// key under "{oldlayout}") wrote it with the Dump of that version: an
// account with a key, a signup grant and a grant, a charged batch of four
// jobs of which two are completed (refunded, with their events), and a
// webhook endpoint.
const (
	layout1Account = "c2b5e208-33df-44c8-9357-0ba4fc26c863"
	layout1Secret  = "vm_live_SNK3GsYRiFMJUpbTpxVtYXXzKZClpXub93fO5aeZaXo"
)

// loadDump writes a Dump taken under the prefix from into the server
// under the prefix to.
func loadDump(t *testing.T, c redis.UniversalClient, file, from, to string) {
	t.Helper()
	ctx := t.Context()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var dump map[string]json.RawMessage
	if err := json.Unmarshal(raw, &dump); err != nil {
		t.Fatal(err)
	}
	for k, v := range dump {
		name := "{" + to + "}" + strings.TrimPrefix(k, "{"+from+"}")
		var (
			str  string
			hash map[string]string
			list []string
			zset []redis.Z
		)
		switch {
		case json.Unmarshal(v, &str) == nil:
			err = c.Set(ctx, name, str, 0).Err()
		case json.Unmarshal(v, &hash) == nil:
			err = c.HSet(ctx, name, hash).Err()
		case json.Unmarshal(v, &list) == nil:
			err = c.RPush(ctx, name, list).Err()
		case json.Unmarshal(v, &zset) == nil:
			err = c.ZAdd(ctx, name, zset...).Err()
		default:
			t.Fatalf("%s: unknown value %s", k, v)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// A store written by the previous layout is read, and keeps working, as
// it lies: its account and everything of it are in shard 0.
func TestReadsPreviousLayout(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, c, prefix := setup(t, nil)
	loadDump(t, c, "testdata/layout1.json", "oldlayout", prefix)

	k, err := s.Authenticate(ctx, layout1Secret)
	if err != nil || k.AccountID != layout1Account {
		t.Fatalf("authenticate the old key: %+v, %v", k, err)
	}
	if a, err := s.GetAccountByEmail(ctx, "old@example.com"); err != nil || a.ID != layout1Account {
		t.Fatalf("account by email: %+v, %v", a, err)
	}
	// 100 signup + 50 grant - 4 charged + 2 refunds.
	if bal, err := s.Balance(ctx, layout1Account); err != nil || bal != 148 {
		t.Fatalf("balance %d, %v; want 148", bal, err)
	}
	e, err := s.Apply(ctx, credits.Change{AccountID: layout1Account, Delta: 50, Reason: credits.ReasonGrant, IdempotencyKey: "g1"})
	if err != nil || !e.Replayed {
		t.Fatalf("the old idempotency key: %+v, %v", e, err)
	}
	emails := []string{"a@example.org", "b@example.org", "c@example.org", "d@example.org"}
	ids, err := s.EnqueueCharged(ctx, jobtype.EnqueueChargedParams{AccountID: layout1Account, Emails: emails, IdempotencyKey: "b1"})
	if err != nil || strings.Join(ids, ",") != "1,2,3,4" {
		t.Fatalf("the old batch's idempotency key: %v, %v", ids, err)
	}
	b, err := s.Batch(ctx, layout1Account, "1")
	if err != nil || b.Total != 4 || b.Completed != 2 {
		t.Fatalf("old batch %+v, %v", b, err)
	}
	ls, err := s.Lease(ctx, jobsdriver.LeaseParams{Max: 10, Duration: time.Minute})
	if err != nil || len(ls) != 2 {
		t.Fatalf("lease the old batch's jobs: %+v, %v", ls, err)
	}
	for _, l := range ls {
		r := emailcheck.Result{Email: l.Email}
		r.Confidence.Status = emailcheck.StatusLikely
		if err := s.Complete(ctx, jobsdriver.CompleteParams{ID: l.ID, Token: l.Token, Result: r}); err != nil {
			t.Fatal(err)
		}
	}
	if b, err := s.Batch(ctx, layout1Account, "1"); err != nil || b.State != jobtype.StateCompleted || b.Completed != 4 {
		t.Fatalf("old batch after completion %+v, %v", b, err)
	}
	w := s.Backend().Outbox.(*redisstore.Webhooks)
	if ds, err := w.Deliveries(ctx, webhook.ListParams{AccountID: layout1Account}); err != nil || len(ds) != 2 {
		t.Fatalf("old deliveries %+v, %v", ds, err)
	}
	if ep, err := w.GetEndpoint(ctx, layout1Account); err != nil || ep.URL != "https://example.org/hook" {
		t.Fatalf("old endpoint %+v, %v", ep, err)
	}
	// A new batch of the old account continues its ids.
	ids, err = s.Enqueue(ctx, jobtype.EnqueueParams{AccountID: layout1Account, Emails: []string{"e@example.org"}, Cost: 1})
	if err != nil || len(ids) != 1 || ids[0] != "5" {
		t.Fatalf("new batch of the old account: %v, %v", ids, err)
	}
	// A new account beside it lives in a shard of its own.
	a, err := s.CreateAccount(ctx, store.CreateAccountParams{Email: "new@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateAccount(ctx, store.CreateAccountParams{Email: "OLD@example.com"}); err == nil {
		t.Fatal("the old account's email was taken again")
	}
	if bal, err := s.Balance(ctx, a.ID); err != nil || bal != store.DefaultSignupCredits {
		t.Fatalf("new account's balance %d, %v", bal, err)
	}
}

// The keys of 100 accounts, each with a charged batch worked through, are
// spread over the masters of the cluster: none holds more than 60 % of
// them. (Every command on the test cluster is also checked for CROSSSLOT:
// see clusterClient.)
func TestClusterSpreadsAccounts(t *testing.T) {
	s, cc, prefix := setupCluster(t, nil)
	ctx := t.Context()
	be := s.Backend()
	q, err := jobs.NewQueue(be.Jobs, credits.New(be.Credits, nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		a, err := s.CreateAccount(ctx, store.CreateAccountParams{Email: fmt.Sprintf("u%d@example.com", i)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := q.EnqueueCharged(ctx, jobtype.EnqueueChargedParams{AccountID: a.ID,
			Emails: []string{"a@example.org", "b@example.org", "c@example.org"}}); err != nil {
			t.Fatal(err)
		}
	}
	for done := 0; done < 300; {
		ls, err := s.Lease(ctx, jobsdriver.LeaseParams{Max: 50, Duration: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if len(ls) == 0 {
			t.Fatalf("nothing to lease after %d of 300 jobs", done)
		}
		for _, l := range ls {
			r := emailcheck.Result{Email: l.Email}
			r.Confidence.Status = emailcheck.StatusLikely
			if err := s.Complete(ctx, jobsdriver.CompleteParams{ID: l.ID, Token: l.Token, Result: r, Refund: 1,
				Event: &webhook.Event{ID: "ev-" + l.ID, Type: "job.completed", Payload: []byte(`{}`)}}); err != nil {
				t.Fatal(err)
			}
			done++
		}
	}
	var (
		mu     sync.Mutex
		counts = map[string]int{}
	)
	err = cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		n := 0
		iter := m.Scan(ctx, 0, "{"+prefix+"[}:]*", 1000).Iterator()
		for iter.Next(ctx) {
			n++
		}
		mu.Lock()
		defer mu.Unlock()
		counts[m.Options().Addr] = n
		return iter.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("keys per master: %v", counts)
	if len(counts) < 3 {
		t.Fatalf("the cluster has %d masters, want 3", len(counts))
	}
	// 16 shards over 3 masters with equal ranges of slots: 5 or 6 each,
	// about a third of the accounts, and shard 0's global keys on top.
	// 60 % is far from that, and far below all on one master.
	total := 0
	for _, n := range counts {
		total += n
	}
	for addr, n := range counts {
		if share := float64(n) / float64(total); share > 0.6 {
			t.Errorf("master %s holds %d of the store's %d keys (%.0f %%), want at most 60 %%", addr, n, total, 100*share)
		}
	}
}

// A prefix that ends like a shard's tag would share keys with another
// prefix's shard: New refuses it.
func TestShardLikePrefixRefused(t *testing.T) {
	t.Parallel()
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never contacted
	defer c.Close()
	for prefix, ok := range map[string]bool{
		"validmail": true, "a:s": true, "a:sx": true, "as1": true, "a:s1x": true,
		"a:s1": false, "a:s12.3": false, "x:y:s0.0": false, "a{b": false,
	} {
		_, err := redisstore.New(c, &redisstore.Config{Prefix: prefix})
		if (err == nil) != ok {
			t.Errorf("New(prefix %q): %v, want ok=%v", prefix, err, ok)
		}
	}
}

// The CROSSSLOT check sees a command whose keys are in two slots, sent
// through the cluster client or straight to a node.
func TestClusterCrossSlotChecked(t *testing.T) {
	cc := clusterClient(t)
	ctx := t.Context()
	prefix := "vmtest-crossslot-" + uuid.NewString()
	a, b := "{"+prefix+"a}x", "{"+prefix+"b}x"
	if err := cc.MSet(ctx, a, 1, b, 1).Err(); err == nil || !strings.Contains(err.Error(), "CROSSSLOT") {
		t.Fatalf("MSET over two slots: %v, want CROSSSLOT", err)
	}
	m, err := cc.MasterForKey(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Eval(ctx, "return 1", []string{a, b}).Err(); err == nil {
		t.Fatal("a script over two slots ran on a node")
	}
	seen := 0
	crossSlots.Range(func(k, _ any) bool {
		if strings.Contains(fmt.Sprint(k), prefix) {
			crossSlots.Delete(k)
			seen++
		}
		return true
	})
	if seen != 2 {
		t.Errorf("%d of the 2 commands over two slots were seen", seen)
	}
}
