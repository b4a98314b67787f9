package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/jobs/jobsdriver"
	"github.com/validmail/validmail/jobs/jobtype"
	"github.com/validmail/validmail/store"
	"github.com/validmail/validmail/store/redisstore"
)

// envFailoverPort names the variable holding the first of six free
// loopback ports (their cluster bus ports, 10000 above, must be free too)
// on which the failover test starts a Redis Cluster of its own: three
// masters, each with a replica.
const envFailoverPort = "VALIDMAIL_TEST_REDIS_FAILOVER_PORT"

// failoverCluster is a cluster the test started and may break.
type failoverCluster struct {
	addrs []string
	procs map[string]*exec.Cmd // by address
}

// startFailoverCluster starts the six servers, creates the cluster and
// waits until every master has a replica in sync.
func startFailoverCluster(t *testing.T) *failoverCluster {
	t.Helper()
	return startCluster(t, 0, 3, 1)
}

// startCluster starts a cluster of masters, each with replicas, on the
// ports from envFailoverPort's plus offset, and waits until it is healthy
// and every replica in sync. It skips tb when envFailoverPort is unset.
// A cluster of one master has no replicas and owns every slot.
func startCluster(tb testing.TB, offset, masters, replicas int) *failoverCluster {
	tb.Helper()
	raw := os.Getenv(envFailoverPort)
	if raw == "" {
		tb.Skip(envFailoverPort + " is not set: skipping the test that starts its own cluster")
	}
	first, err := strconv.Atoi(raw)
	if err != nil {
		tb.Fatalf("%s=%q: %v", envFailoverPort, raw, err)
	}
	for _, bin := range []string{"redis-server", "redis-cli"} {
		if _, err := exec.LookPath(bin); err != nil {
			tb.Fatalf("%s=%s but %v", envFailoverPort, raw, err)
		}
	}
	if masters == 1 {
		replicas = 0
	}
	fc := &failoverCluster{procs: make(map[string]*exec.Cmd)}
	dir := tb.TempDir()
	for i := range masters * (1 + replicas) {
		port := strconv.Itoa(first + offset + i)
		d := filepath.Join(dir, port)
		if err := os.Mkdir(d, 0o755); err != nil {
			tb.Fatal(err)
		}
		cmd := exec.Command("redis-server", "--bind", "127.0.0.1", "--port", port, "--dir", d,
			"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", "2000", "--save", "", "--appendonly", "no",
			"--logfile", filepath.Join(d, "redis.log"))
		if err := cmd.Start(); err != nil {
			tb.Fatal(err)
		}
		addr := "127.0.0.1:" + port
		fc.addrs = append(fc.addrs, addr)
		fc.procs[addr] = cmd
		tb.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	}
	for _, a := range fc.addrs {
		c := redis.NewClient(&redis.Options{Addr: a})
		waitFor(tb, 60*time.Second, "server "+a+" answers", func() bool { return c.Ping(tb.Context()).Err() == nil })
		c.Close()
	}
	if masters == 1 {
		c := redis.NewClient(&redis.Options{Addr: fc.addrs[0]})
		err := c.Do(tb.Context(), "CLUSTER", "ADDSLOTSRANGE", 0, 16383).Err()
		c.Close()
		if err != nil {
			tb.Fatalf("CLUSTER ADDSLOTSRANGE: %v", err)
		}
	} else {
		args := append([]string{"--cluster", "create"}, fc.addrs...)
		args = append(args, "--cluster-replicas", strconv.Itoa(replicas), "--cluster-yes")
		if out, err := exec.Command("redis-cli", args...).CombinedOutput(); err != nil {
			tb.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
		}
	}
	for _, a := range fc.addrs {
		c := redis.NewClient(&redis.Options{Addr: a})
		waitFor(tb, 120*time.Second, "node "+a+" in a healthy cluster", func() bool {
			info, err := c.ClusterInfo(tb.Context()).Result()
			if err != nil || !strings.Contains(info, "cluster_state:ok") {
				return false
			}
			if replicas == 0 {
				return true
			}
			repl, err := c.Info(tb.Context(), "replication").Result()
			if err != nil {
				return false
			}
			return strings.Contains(repl, "connected_slaves:1") || strings.Contains(repl, "master_link_status:up")
		})
		c.Close()
	}
	return fc
}

// waitFor polls cond until it holds, failing t after limit.
func waitFor(t testing.TB, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for: %s", limit, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// The master that holds an account's jobs is killed in the middle of a
// batch: its replica takes over, the workers follow it, every job is
// completed once and the balance is exact.
func TestClusterFailoverMidBatch(t *testing.T) {
	fc := startFailoverCluster(t)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cc := redisstore.NewClusterClient(&redis.ClusterOptions{Addrs: fc.addrs, PoolSize: 32})
	defer cc.Close()
	s, err := redisstore.New(cc, &redisstore.Config{Prefix: "failover", Init: true})
	if err != nil {
		t.Fatal(err)
	}
	const n, grant = 3000, 10000
	acct, err := s.CreateAccount(ctx, store.CreateAccountParams{Email: "f@example.com", SignupCredits: grant})
	if err != nil {
		t.Fatal(err)
	}
	emails := make([]string, n)
	for i := range emails {
		emails[i] = fmt.Sprintf("u%d@example.com", i)
	}
	ids, err := s.EnqueueCharged(ctx, jobtype.EnqueueChargedParams{AccountID: acct.ID, Emails: emails})
	if err != nil {
		t.Fatal(err)
	}
	master, err := cc.MasterForKey(ctx, redisstore.KeyOf(s, acct.ID, "ready"))
	if err != nil {
		t.Fatal(err)
	}
	// The batch and its charge are on the replica before the kill.
	if err := master.Do(ctx, "WAIT", 1, 10000).Err(); err != nil {
		t.Fatal(err)
	}
	victim := master.Options().Addr
	refund := func(id string) int64 {
		if id[len(id)-1]%2 == 1 {
			return 1
		}
		return 0
	}

	var (
		completed atomic.Int64
		killedAt  atomic.Int64 // unix ns
		failedAt  atomic.Int64 // unix ns: the first failure after the kill
		resumedAt atomic.Int64 // unix ns: the end of the first completion started after the kill
		errs      sync.Map     // error text → true
	)
	work, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for work.Err() == nil {
				ls, err := s.Lease(work, jobsdriver.LeaseParams{Max: 20, Duration: 3 * time.Second})
				if err != nil {
					if killedAt.Load() != 0 {
						failedAt.CompareAndSwap(0, time.Now().UnixNano())
					}
					errs.Store(err.Error(), true)
					time.Sleep(20 * time.Millisecond) // back off while the cluster fails over
					continue
				}
				if len(ls) == 0 {
					time.Sleep(20 * time.Millisecond)
					continue
				}
				for _, l := range ls {
					start := time.Now().UnixNano()
					err := s.Complete(work, jobsdriver.CompleteParams{ID: l.ID, Token: l.Token, Refund: refund(l.ID),
						Result: emailcheck.Result{Email: l.Email, Confidence: emailcheck.Confidence{Status: emailcheck.StatusLikely}}, Retention: time.Hour})
					switch {
					case err == nil:
						completed.Add(1)
						// Every key of the account is on the killed
						// master: a completion started after the kill
						// ends once the cluster has failed over.
						if k := killedAt.Load(); k != 0 && start > k {
							resumedAt.CompareAndSwap(0, time.Now().UnixNano())
						}
					case errors.Is(err, jobtype.ErrLeaseLost), errors.Is(err, jobtype.ErrNotFound):
					default:
						if killedAt.Load() != 0 {
							failedAt.CompareAndSwap(0, time.Now().UnixNano())
						}
						errs.Store(err.Error(), true)
					}
				}
			}
		})
	}
	wg.Go(func() {
		for work.Err() == nil {
			s.RescueExpired(work, jobsdriver.RescueParams{})
			time.Sleep(200 * time.Millisecond)
		}
	})
	defer func() { stop(); wg.Wait() }()

	waitFor(t, 3*time.Minute, "a fifth of the batch completed", func() bool { return completed.Load() >= n/5 })
	killedAt.Store(time.Now().UnixNano())
	if err := fc.procs[victim].Process.Kill(); err != nil {
		t.Fatal(err)
	}
	t.Logf("killed master %s after %d completions", victim, completed.Load())

	waitFor(t, 3*time.Minute, "every job completed", func() bool {
		b, err := s.Batch(ctx, acct.ID, ids[0])
		return err == nil && b.Completed == n
	})
	stop()
	wg.Wait()
	resume := time.Duration(resumedAt.Load() - killedAt.Load())
	t.Logf("work resumed %v after the kill", resume.Round(10*time.Millisecond))
	errs.Range(func(k, _ any) bool { t.Logf("error seen: %v", k); return true })
	if f := failedAt.Load(); f != 0 {
		t.Logf("the first failure came %v after the kill", time.Duration(f-killedAt.Load()).Round(10*time.Millisecond))
	} else {
		t.Log("no call failed: the client rode out the failover")
	}
	// The bound: the cluster marks the master failed after
	// cluster-node-timeout (2 s here) and the replica's election waits
	// 0.5–1 s more (the replica's rank adds a second each); the client
	// learns of the new master at its next look at the map of slots,
	// which a failed call starts at once and ClusterReloadInterval (2 s)
	// bounds, and Lease asks a failed shard again after shardBackoff
	// (0.25 s). About 6 s in all: 10 s leaves a loaded machine 4 s.
	if resume <= 0 || resume > 10*time.Second {
		t.Errorf("work resumed %v after the kill, want within 10 s", resume)
	}

	var refunds int64
	for _, id := range ids {
		j, err := s.Get(ctx, acct.ID, id)
		if err != nil {
			t.Fatalf("job %s: %v", id, err)
		}
		if j.State != jobtype.StateCompleted {
			t.Fatalf("job %s is %s", id, j.State)
		}
		refunds += refund(id)
	}
	b, err := s.Batch(ctx, acct.ID, ids[0])
	if err != nil {
		t.Fatal(err)
	}
	if b.Total != n || b.Completed != n || b.Counts[emailcheck.StatusLikely] != n {
		t.Errorf("batch: total %d, completed %d, counts %v; want %d each", b.Total, b.Completed, b.Counts, n)
	}
	bal, err := s.Balance(ctx, acct.ID)
	if err != nil {
		t.Fatal(err)
	}
	if want := grant - n + refunds; bal != want {
		t.Errorf("balance %d, want %d", bal, want)
	}
}

// When one master of three dies, the accounts on the two others keep
// being served: Lease calls made after the kill hand out their jobs, and
// those jobs complete, before the dead master's replica has taken over.
func TestClusterFailoverBlastRadius(t *testing.T) {
	fc := startFailoverCluster(t)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cc := redisstore.NewClusterClient(&redis.ClusterOptions{Addrs: fc.addrs, PoolSize: 32})
	defer cc.Close()
	s, err := redisstore.New(cc, &redisstore.Config{Prefix: "blast", Init: true})
	if err != nil {
		t.Fatal(err)
	}
	// Accounts until every master holds at least three, each with a
	// batch that outlasts the failover.
	const perAcct = 4000
	owner := map[string]string{} // account → its master's address
	slotOf := map[string]int{}   // account → the slot of its shard
	byMaster := map[string]int{}
	for i := 0; i < 200 && (len(byMaster) < 3 || minCount(byMaster) < 3); i++ {
		a, err := s.CreateAccount(ctx, store.CreateAccountParams{Email: fmt.Sprintf("b%d@example.com", i), SignupCredits: perAcct})
		if err != nil {
			t.Fatal(err)
		}
		key := redisstore.KeyOf(s, a.ID, "ready")
		m, err := cc.MasterForKey(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		slot, err := cc.ClusterKeySlot(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		emails := make([]string, perAcct)
		for j := range emails {
			emails[j] = fmt.Sprintf("u%d-%d@example.com", i, j)
		}
		if _, err := s.EnqueueCharged(ctx, jobtype.EnqueueChargedParams{AccountID: a.ID, Emails: emails}); err != nil {
			t.Fatal(err)
		}
		owner[a.ID], slotOf[a.ID] = m.Options().Addr, int(slot)
		byMaster[m.Options().Addr]++
	}
	if len(byMaster) < 3 {
		t.Fatalf("accounts on %d masters, want 3: %v", len(byMaster), byMaster)
	}
	var victim, victimAcct, survivor string
	for a, m := range owner {
		if victim == "" {
			victim, victimAcct = m, a
		} else if m != victim {
			survivor = m
		}
	}
	t.Logf("accounts per master: %v; killing %s", byMaster, victim)

	var (
		killedAt  atomic.Int64 // unix ns
		completed atomic.Int64
		mu        sync.Mutex
		healthy   []int64 // unix ns: completions on surviving masters of jobs leased after the kill
	)
	work, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for work.Err() == nil {
				leasedAt := time.Now().UnixNano()
				ls, err := s.Lease(work, jobsdriver.LeaseParams{Max: 20, Duration: time.Minute})
				if err != nil || len(ls) == 0 {
					time.Sleep(20 * time.Millisecond)
					continue
				}
				for _, l := range ls {
					k := killedAt.Load()
					if k != 0 && owner[l.AccountID] == victim {
						continue // its master is gone: left to expire
					}
					err := s.Complete(work, jobsdriver.CompleteParams{ID: l.ID, Token: l.Token,
						Result: emailcheck.Result{Email: l.Email, Confidence: emailcheck.Confidence{Status: emailcheck.StatusLikely}}, Retention: time.Hour})
					if err != nil {
						continue
					}
					completed.Add(1)
					if k != 0 && leasedAt > k {
						mu.Lock()
						healthy = append(healthy, time.Now().UnixNano())
						mu.Unlock()
					}
				}
			}
		})
	}
	defer func() { stop(); wg.Wait() }()

	waitFor(t, 3*time.Minute, "some jobs completed", func() bool { return completed.Load() >= 500 })
	killedAt.Store(time.Now().UnixNano())
	if err := fc.procs[victim].Process.Kill(); err != nil {
		t.Fatal(err)
	}
	// The failover is over when a surviving master's map gives the
	// victim's slot to another master.
	watch := redis.NewClient(&redis.Options{Addr: survivor})
	defer watch.Close()
	var promotedAt int64
	waitFor(t, 2*time.Minute, "the victim's replica promoted", func() bool {
		//lint:ignore SA1019 CLUSTER SLOTS still answers on Redis 7 and maps a slot to its master in one step.
		slots, err := watch.ClusterSlots(ctx).Result()
		if err != nil {
			return false
		}
		for _, r := range slots {
			if int(r.Start) <= slotOf[victimAcct] && slotOf[victimAcct] <= int(r.End) && len(r.Nodes) > 0 && r.Nodes[0].Addr != victim {
				promotedAt = time.Now().UnixNano()
				return true
			}
		}
		return false
	})
	stop()
	wg.Wait()

	k := killedAt.Load()
	during := 0
	for _, at := range healthy {
		if at < promotedAt {
			during++
		}
	}
	t.Logf("replica promoted %v after the kill; %d completions on the surviving masters of jobs leased after the kill, %d of them before the promotion",
		time.Duration(promotedAt-k).Round(10*time.Millisecond), len(healthy), during)
	if during == 0 {
		t.Errorf("no job of the surviving masters was leased and completed between the kill and the failover: one dead master stalled every account")
	}
}

// minCount returns the smallest value of m.
func minCount(m map[string]int) int {
	low := -1
	for _, v := range m {
		if low < 0 || v < low {
			low = v
		}
	}
	return low
}
