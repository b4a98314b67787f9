package redisstore_test

import (
	"context"
	"os"
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
	var conf redisstore.Config
	if cfg != nil {
		conf = *cfg
	}
	conf.Prefix = "vmtest-" + uuid.NewString()
	s, err := redisstore.New(c, &conf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deleteKeys(t, c, conf.Prefix) })
	return s, c, conf.Prefix
}

// deleteKeys removes every key of the store with the prefix.
func deleteKeys(t testing.TB, c *redis.Client, prefix string) {
	ctx := context.Background()
	iter := c.Scan(ctx, 0, "{"+prefix+"}*", 1000).Iterator()
	var batch []string
	for iter.Next(ctx) {
		batch = append(batch, iter.Val())
		if len(batch) == 500 {
			c.Unlink(ctx, batch...)
			batch = batch[:0]
		}
	}
	if len(batch) > 0 {
		c.Unlink(ctx, batch...)
	}
	if err := iter.Err(); err != nil {
		t.Errorf("deleting test keys: %v", err)
	}
}
