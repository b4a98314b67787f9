package redisstore_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/validmail/validmail/jobs/jobstest"
	"github.com/validmail/validmail/store"
	"github.com/validmail/validmail/store/backend"
	"github.com/validmail/validmail/store/crashtest"
	"github.com/validmail/validmail/store/redisstore"
	"github.com/validmail/validmail/store/storetest"
)

// TestClusterBackend runs the conformance and crash suites on a Redis
// Cluster through a cluster client.
func TestClusterBackend(t *testing.T) {
	clusterClient(t)
	storetest.RunBackend(t, storetest.Harness{New: newClusterBackend, Durable: &clusterDurable})
}

// newClusterBackend returns a backend on the test cluster under a fresh
// prefix.
func newClusterBackend(tb testing.TB) *backend.Backend {
	s, _, _ := setupCluster(tb, nil)
	return s.Backend()
}

// clusterDurable is durable on the test cluster.
var clusterDurable = crashtest.Durable[*backend.Backend]{
	NewNamespace: func(tb testing.TB) string {
		_, _, prefix := setupCluster(tb, nil)
		return prefix
	},
	Open: func(tb testing.TB, prefix string) *backend.Backend {
		s, err := redisstore.New(clusterClient(tb), &redisstore.Config{Prefix: prefix, Init: true})
		if err != nil {
			tb.Fatal(err)
		}
		return s.Backend()
	},
}

// A plain client sent to the wrong master gets MOVED: the store reports
// the server unavailable, never bad data.
func TestClusterMovedIsNotBadData(t *testing.T) {
	cc := clusterClient(t)
	ctx := t.Context()
	var (
		mu      sync.Mutex // ForEachMaster calls concurrently
		masters []*redis.Client
	)
	err := cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		mu.Lock()
		defer mu.Unlock()
		masters = append(masters, redis.NewClient(m.Options()))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(masters) < 2 {
		t.Skip("the cluster has a single master")
	}
	for _, m := range masters {
		defer m.Close()
	}
	// A plain client on a master that does not hold account A's shard.
	prefix := "vmtest-moved-" + uuid.NewString()
	probe, err := redisstore.New(cc, &redisstore.Config{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	owner, err := cc.MasterForKey(ctx, redisstore.KeyOf(probe, "A", "bal:A"))
	if err != nil {
		t.Fatal(err)
	}
	var wrong *redis.Client
	for _, m := range masters {
		if m.Options().Addr != owner.Options().Addr {
			wrong = m
		}
	}
	s, err := redisstore.New(wrong, &redisstore.Config{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Balance(ctx, "A")
	if err == nil {
		t.Fatal("a read on the wrong master succeeded")
	}
	if errors.Is(err, redisstore.ErrBadData) || !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("MOVED reported as %v, want ErrUnavailable and not ErrBadData", err)
	}
}

// BenchmarkClusterQueue runs the queue benchmarks on the test cluster.
func BenchmarkClusterQueue(b *testing.B) {
	jobstest.Bench(b, func(tb testing.TB) jobstest.Backend { return storetest.Jobs(tb, newClusterBackend(tb)) })
}

// Setup on a cluster reads the persistence of the master that holds the
// store's keys and writes its marker there.
func TestClusterSetup(t *testing.T) {
	s, cc, prefix := setupCluster(t, nil)
	ctx := t.Context()
	if err := s.Setup(ctx); err != nil {
		t.Fatal(err)
	}
	p, err := s.Persistence(ctx)
	if err != nil {
		t.Fatal(err)
	}
	m, err := cc.MasterForKey(ctx, "{"+prefix+"}marker")
	if err != nil {
		t.Fatal(err)
	}
	aof, err := m.ConfigGet(ctx, "appendonly").Result()
	if err != nil {
		t.Fatal(err)
	}
	if !p.Known || p.AOF != (aof["appendonly"] == "yes") {
		t.Errorf("persistence %+v, the master says appendonly=%q", p, aof["appendonly"])
	}
	if n, err := m.Exists(ctx, "{"+prefix+"}marker").Result(); err != nil || n != 1 {
		t.Errorf("the marker is not on the master of its slot: %d, %v", n, err)
	}
}

// The store's slot computation agrees with the cluster's.
func TestKeySlot(t *testing.T) {
	cc := clusterClient(t)
	for _, key := range []string{"a", "validmail", "validmail:s3.17", "123456789", "élan"} {
		want, err := cc.ClusterKeySlot(t.Context(), "{"+key+"}x").Result()
		if err != nil {
			t.Fatal(err)
		}
		if got := redisstore.KeySlot(key); int64(got) != want {
			t.Errorf("KeySlot(%q) = %d, the server says %d", key, got, want)
		}
	}
}
