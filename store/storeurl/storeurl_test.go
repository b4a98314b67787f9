package storeurl_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/validmail/validmail/store"
	"github.com/validmail/validmail/store/storeurl"
)

func TestRedact(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{
		"postgres://app:s3cr3t@db.internal:5432/vm?sslmode=require",
		"postgres://app@db.internal:5432/vm?password=s3cr3t&sslmode=require",
		"postgresql://db.internal/vm?user=app&password=s3cr3t",
		"postgres://db.internal/vm?sslpassword=s3cr3t&sslkey=s3cr3t",
		"redis://:s3cr3t@cache.internal:6379/0",
		"redis://default:s3cr3t@cache.internal:6379/0?prefix=vm",
		"rediss://cache.internal:6379/0?password=s3cr3t",
		"redis+cluster://:s3cr3t@cache1.internal:6379,cache2.internal:6379/?prefix=vm",
	} {
		got := storeurl.Redact(raw)
		if strings.Contains(got, "s3cr3t") {
			t.Errorf("Redact(%q) = %q: the password shows", raw, got)
		}
		if !strings.Contains(got, "internal") {
			t.Errorf("Redact(%q) = %q: the host is gone", raw, got)
		}
	}
	if got := storeurl.Redact("memory"); got != "memory" {
		t.Errorf("Redact(memory) = %q", got)
	}
}

// Connection errors name the server without the password, whatever form
// it was given in.
func TestOpenErrorsHidePasswords(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, raw := range []string{
		"postgres://app:s3cr3t@127.0.0.1:1/vm?connect_timeout=1",
		"postgres://app@127.0.0.1:1/vm?password=s3cr3t&connect_timeout=1",
		"postgres://app@127.0.0.1:1/vm?password=s3cr3t&pool_max_conns=nonsense",
		"redis://:s3cr3t@127.0.0.1:1/0?dial_timeout=1s",
		"redis://127.0.0.1:1/0?password=s3cr3t&dial_timeout=1s",
		"redis+cluster://:s3cr3t@127.0.0.1:1,127.0.0.1:2/?dial_timeout=1s",
		"redis+cluster://127.0.0.1:1/?password=s3cr3t&dial_timeout=1s",
	} {
		_, err := storeurl.Open(ctx, raw, nil)
		if err == nil {
			t.Fatalf("Open(%q) succeeded", raw)
		}
		if strings.Contains(err.Error(), "s3cr3t") {
			t.Errorf("Open(%q): %v: the password shows", raw, err)
		}
	}
	if _, err := storeurl.Open(ctx, "mysql://x", nil); !errors.Is(err, storeurl.ErrBadURL) {
		t.Errorf("mysql://: %v, want ErrBadURL", err)
	}
}

// A cluster URL opens a cluster client: stores under prefixes that hash to
// every master work, wherever the first listed node is.
func TestOpenRedisCluster(t *testing.T) {
	raw := os.Getenv("VALIDMAIL_TEST_REDIS_CLUSTER")
	if raw == "" {
		t.Skip("VALIDMAIL_TEST_REDIS_CLUSTER is not set")
	}
	ctx := t.Context()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(u.Host, ",")})
	defer cc.Close()
	for i := range 8 {
		prefix := fmt.Sprintf("vmtest-url-%s-%d", uuid.NewString(), i)
		t.Cleanup(func() {
			cc.ForEachMaster(context.Background(), func(ctx context.Context, m *redis.Client) error {
				keys, _ := m.Keys(ctx, "{"+prefix+"[}:]*").Result()
				for _, k := range keys {
					m.Unlink(ctx, k)
				}
				return nil
			})
		})
		b, err := storeurl.Open(ctx, raw+"?prefix="+prefix, &storeurl.Options{Init: true})
		if err != nil {
			t.Fatalf("prefix %s: %v", prefix, err)
		}
		a, err := b.Accounts.CreateAccount(ctx, store.CreateAccountParams{Email: "a@example.com"})
		if err != nil {
			t.Fatalf("prefix %s: create account: %v", prefix, err)
		}
		if got, err := b.Credits.Balance(ctx, a.ID); err != nil || got <= 0 {
			t.Fatalf("prefix %s: balance %d, %v", prefix, got, err)
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestOpenRedisClusterBadURL(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{
		"redis+cluster://127.0.0.1:1,127.0.0.1:2/3",
		"redis+cluster://127.0.0.1:1/?addr=127.0.0.1:2",
		"redis+cluster://127.0.0.1:1,nohost/",
		"redis+cluster://127.0.0.1:1/?prefix=a{b}",
		"redis+cluster://127.0.0.1:1/?nonsense=1",
		"redis+cluster://" + strings.Repeat("127.0.0.1:1,", 70) + "127.0.0.1:1/",
	} {
		if _, err := storeurl.Open(t.Context(), raw, nil); !errors.Is(err, storeurl.ErrBadURL) {
			t.Errorf("Open(%q): %v, want ErrBadURL", raw, err)
		}
	}
}
