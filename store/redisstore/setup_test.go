package redisstore_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	"github.com/validmail/validmail/store/redisstore"
)

// envRedis names the variable holding the URL of the server tests use.
const envRedis = "VALIDMAIL_TEST_REDIS"

// sharedClient is the one client of the test binary, made on first use.
var sharedClient = sync.OnceValues(func() (*redis.Client, error) {
	opt, err := redis.ParseURL(os.Getenv(envRedis))
	if err != nil {
		return nil, err
	}
	opt.PoolSize = 64
	c := redis.NewClient(opt)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
})

// client returns the test server's client: it skips t when envRedis is
// unset and fails it when the server cannot be reached.
func client(t testing.TB) *redis.Client {
	t.Helper()
	if os.Getenv(envRedis) == "" {
		t.Skip(envRedis + " is not set: skipping the Redis backend tests")
	}
	c, err := sharedClient()
	if err != nil {
		t.Fatalf("%s=%s: %v", envRedis, os.Getenv(envRedis), err)
	}
	return c
}

// setup returns a Store under a fresh prefix whose keys are deleted when
// t ends.
func setup(t testing.TB, cfg *redisstore.Config) (*redisstore.Store, *redis.Client, string) {
	t.Helper()
	c := client(t)
	s, prefix := setupOn(t, c, cfg)
	return s, c, prefix
}

// setupOn returns a Store over c under a fresh prefix whose keys are
// deleted when t ends.
func setupOn(t testing.TB, c redis.UniversalClient, cfg *redisstore.Config) (*redisstore.Store, string) {
	t.Helper()
	var conf redisstore.Config
	if cfg != nil {
		conf = *cfg
	}
	conf.Prefix = "vmtest-" + uuid.NewString()
	conf.Init = true // a new store
	s, err := redisstore.New(c, &conf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deleteKeys(t, c, conf.Prefix) })
	return s, conf.Prefix
}

// deleteKeys removes every key of the store with the prefix.
func deleteKeys(t testing.TB, c redis.UniversalClient, prefix string) {
	ctx := context.Background()
	if cc, ok := c.(*redis.ClusterClient); ok {
		err := cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
			deleteKeys(t, m, prefix)
			return nil
		})
		if err != nil {
			t.Errorf("deleting test keys: %v", err)
		}
		return
	}
	iter := c.Scan(ctx, 0, "{"+prefix+"[}:]*", 1000).Iterator()
	var batch []string
	for iter.Next(ctx) {
		batch = append(batch, iter.Val())
		if len(batch) == 500 {
			unlink(ctx, c, batch)
			batch = batch[:0]
		}
	}
	unlink(ctx, c, batch)
	if err := iter.Err(); err != nil {
		t.Errorf("deleting test keys: %v", err)
	}
}

// unlink deletes keys one by one: on a cluster node they may sit in
// several slots, which one UNLINK cannot take.
func unlink(ctx context.Context, c redis.UniversalClient, keys []string) {
	if len(keys) == 0 {
		return
	}
	p := c.Pipeline()
	for _, k := range keys {
		p.Unlink(ctx, k)
	}
	p.Exec(ctx)
}

// envRedisCluster names the variable holding the URL of the Redis Cluster
// tests use, in storeurl's form: redis+cluster://host:port,host:port/.
const envRedisCluster = "VALIDMAIL_TEST_REDIS_CLUSTER"

// sharedCluster is the one cluster client of the test binary.
var sharedCluster = sync.OnceValues(func() (*redis.ClusterClient, error) {
	return dialCluster(os.Getenv(envRedisCluster))
})

// dialCluster connects to the cluster named by a redis+cluster:// URL.
func dialCluster(raw string) (*redis.ClusterClient, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, err
	}
	c := redisstore.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(u.Host, ","), PoolSize: 64})
	// Every command, on the cluster client and on the clients of its
	// nodes (which the store also uses directly), is checked for
	// CROSSSLOT.
	hook := crossSlotHook{seen: &crossSlots}
	c.AddHook(hook)
	c.OnNewNode(func(n *redis.Client) { n.AddHook(hook) })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// clusterClient returns the test cluster's client: it skips t when
// envRedisCluster is unset and fails it when the cluster cannot be
// reached.
func clusterClient(t testing.TB) *redis.ClusterClient {
	t.Helper()
	if os.Getenv(envRedisCluster) == "" {
		t.Skip(envRedisCluster + " is not set: skipping the Redis Cluster tests")
	}
	c, err := sharedCluster()
	if err != nil {
		t.Fatalf("%s=%s: %v", envRedisCluster, os.Getenv(envRedisCluster), err)
	}
	t.Cleanup(func() { reportCrossSlots(t) })
	return c
}

// crossSlots holds the commands on the test cluster that met CROSSSLOT
// and were not reported yet.
var crossSlots sync.Map

// reportCrossSlots fails t for every command that met CROSSSLOT since the
// last report: a key layout that puts one command's keys in two slots
// fails the test that was running, whichever it is.
func reportCrossSlots(t testing.TB) {
	crossSlots.Range(func(k, _ any) bool {
		if _, ok := crossSlots.LoadAndDelete(k); ok {
			t.Errorf("CROSSSLOT: %v", k)
		}
		return true
	})
}

// crossSlotHook records every CROSSSLOT reply.
type crossSlotHook struct{ seen *sync.Map }

func (crossSlotHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h crossSlotHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if err != nil && strings.Contains(err.Error(), "CROSSSLOT") {
			h.seen.Store(fmt.Sprint(cmd.Args()), true)
		}
		return err
	}
}

func (h crossSlotHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, c := range cmds {
			if c.Err() != nil && strings.Contains(c.Err().Error(), "CROSSSLOT") {
				h.seen.Store(fmt.Sprint(c.Args()), true)
			}
		}
		return err
	}
}

// setupCluster returns a Store on the test cluster under a fresh prefix
// whose keys are deleted when t ends.
func setupCluster(t testing.TB, cfg *redisstore.Config) (*redisstore.Store, *redis.ClusterClient, string) {
	t.Helper()
	c := clusterClient(t)
	s, prefix := setupOn(t, c, cfg)
	return s, c, prefix
}
