package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/validmail/validmail/store/storeurl"
)

// testStore is a store the end-to-end tests run on.
type testStore struct {
	name string
	// fresh returns a -store URL no other test uses, or skips the test
	// when the store's server is not configured.
	fresh func(t *testing.T) string
}

// stores returns memory, postgres, redis and redis-cluster, in this
// order.
func stores() []testStore {
	return []testStore{
		{"memory", func(*testing.T) string { return "memory" }},
		{"postgres", freshPostgres},
		{"redis", freshRedis},
		{"redis-cluster", freshRedisCluster},
	}
}

func randomName(prefix string) string {
	b := make([]byte, 6)
	rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// withParam adds name=value to the query of rawURL.
func withParam(rawURL, name, value string) string {
	sep := "?"
	if strings.Contains(rawURL, "?") {
		sep = "&"
	}
	return rawURL + sep + name + "=" + value
}

// initialised initialises the Redis store at rawURL, as the first start of
// a deployment with -store-init does, and returns rawURL.
func initialised(t *testing.T, rawURL string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := storeurl.Open(ctx, rawURL, &storeurl.Options{Init: true})
	if err != nil {
		t.Fatalf("initialising %s: %v", storeurl.Redact(rawURL), err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	return rawURL
}

// freshPostgres returns VALIDMAIL_TEST_POSTGRES with a schema of its own,
// dropped when the test ends.
func freshPostgres(t *testing.T) string {
	base := os.Getenv("VALIDMAIL_TEST_POSTGRES")
	if base == "" {
		t.Skip("VALIDMAIL_TEST_POSTGRES is not set: skipping the PostgreSQL test")
	}
	schema := randomName("e2e_")
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Errorf("dropping schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+schema+" CASCADE"); err != nil {
			t.Errorf("dropping schema %s: %v", schema, err)
		}
	})
	return withParam(base, "schema", schema)
}

// freshRedis returns VALIDMAIL_TEST_REDIS with a key prefix of its own,
// initialised, whose keys are deleted when the test ends.
func freshRedis(t *testing.T) string {
	return initialised(t, emptyRedis(t))
}

// emptyRedis returns VALIDMAIL_TEST_REDIS with a key prefix of its own,
// not initialised, whose keys are deleted when the test ends.
func emptyRedis(t *testing.T) string {
	base := os.Getenv("VALIDMAIL_TEST_REDIS")
	if base == "" {
		t.Skip("VALIDMAIL_TEST_REDIS is not set: skipping the Redis test")
	}
	prefix := randomName("e2e-")
	t.Cleanup(func() {
		opts, err := redis.ParseURL(base)
		if err != nil {
			t.Errorf("VALIDMAIL_TEST_REDIS: %v", err)
			return
		}
		c := redis.NewClient(opts)
		defer c.Close()
		// The server may be shared and large: scan in big steps.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		var doomed []string
		iter := c.Scan(ctx, 0, "{"+prefix+"[}:]*", 50000).Iterator()
		for iter.Next(ctx) {
			doomed = append(doomed, iter.Val())
		}
		if err := iter.Err(); err != nil {
			t.Errorf("finding keys of %s: %v", prefix, err)
		}
		if len(doomed) > 0 {
			if err := c.Unlink(ctx, doomed...).Err(); err != nil {
				t.Errorf("deleting keys of %s: %v", prefix, err)
			}
		}
	})
	return withParam(base, "prefix", prefix)
}

// freshRedisCluster returns VALIDMAIL_TEST_REDIS_CLUSTER (a
// redis+cluster:// URL) with a key prefix of its own, whose keys are
// deleted when the test ends.
func freshRedisCluster(t *testing.T) string {
	base := os.Getenv("VALIDMAIL_TEST_REDIS_CLUSTER")
	if base == "" {
		t.Skip("VALIDMAIL_TEST_REDIS_CLUSTER is not set: skipping the Redis Cluster test")
	}
	prefix := randomName("e2e-")
	t.Cleanup(func() {
		u, err := url.Parse(base)
		if err != nil {
			t.Errorf("VALIDMAIL_TEST_REDIS_CLUSTER: %v", err)
			return
		}
		c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(u.Host, ",")})
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		err = c.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
			iter := m.Scan(ctx, 0, "{"+prefix+"[}:]*", 50000).Iterator()
			for iter.Next(ctx) {
				m.Unlink(ctx, iter.Val())
			}
			return iter.Err()
		})
		if err != nil {
			t.Errorf("deleting keys of %s: %v", prefix, err)
		}
	})
	return initialised(t, withParam(base, "prefix", prefix))
}
