package redisstore_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/validmail/validmail/httpapi"
	"github.com/validmail/validmail/httpapi/service"
	"github.com/validmail/validmail/store/ratelimit"
	"github.com/validmail/validmail/store/redisstore"
)

// BenchmarkValidateSpread serves GET /validate through the service's
// handler, with the key's and the account's rate limits on (high enough
// never to refuse), for 48 accounts' keys at once: on the single server
// (VALIDMAIL_TEST_REDIS), and on clusters of one and of three masters
// that it starts on loopback (from VALIDMAIL_TEST_REDIS_FAILOVER_PORT,
// the ports of the failover test, which must not run at the same time).
// Each request is two round trips, the rate limits and the charge, both
// in the account's shard. On a cluster it reports the busiest master's
// part of the commands the masters ran.
func BenchmarkValidateSpread(b *testing.B) {
	b.Run("single", func(b *testing.B) { benchValidate(b, client(b)) })
	if os.Getenv(envFailoverPort) == "" {
		return
	}
	for _, masters := range []int{1, 3} {
		// Started once, for every run of the sub-benchmark: one master
		// on the fourth port, three on the first three.
		offset := 0
		if masters == 1 {
			offset = 3
		}
		fc := startCluster(b, offset, masters, 0)
		cc := redisstore.NewClusterClient(&redis.ClusterOptions{Addrs: fc.addrs, PoolSize: 64})
		b.Cleanup(func() { cc.Close() })
		b.Run(fmt.Sprintf("cluster-%d", masters), func(b *testing.B) { benchValidate(b, cc) })
	}
}

func benchValidate(b *testing.B, c redis.UniversalClient) {
	ctx := context.Background()
	s, _ := setupOn(b, c, nil)
	high := ratelimit.Limit{PerSecond: 1e6, Burst: 1e6}
	svc, err := service.New(s.Backend(), &service.Config{
		Validator: instantValidator{}, Workers: -1, UsageFlushInterval: time.Hour,
		API: httpapi.Config{RateLimit: high, AccountRateLimit: high, KeyCacheTTL: time.Hour},
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { svc.Close() })
	const accounts = 48
	keys := make([]string, accounts)
	for i := range keys {
		_, key, err := service.Bootstrap(ctx, s, service.BootstrapParams{Email: fmt.Sprintf("bench%d@example.org", i), Credits: 1 << 40})
		if err != nil {
			b.Fatal(err)
		}
		keys[i] = key
	}
	get := func(key string) {
		req := httptest.NewRequest("GET", "/validate?email=jane@example.org", nil)
		req.Header.Set("x-api-key", key)
		rec := httptest.NewRecorder()
		svc.Mux().ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
	}
	for _, k := range keys { // keys cached, scripts loaded
		get(k)
	}
	var next atomic.Int64
	before := commandsPerMaster(b, c)
	b.SetParallelism(8) // 16 requests at once on 2 cores
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			get(keys[next.Add(1)%accounts])
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
	// How evenly the masters shared the work: the busiest one's part of
	// the commands they ran.
	if cc, ok := c.(*redis.ClusterClient); ok {
		after := commandsPerMaster(b, cc)
		var total, busiest int64
		for addr, n := range after {
			d := n - before[addr]
			total += d
			busiest = max(busiest, d)
		}
		if total > 0 {
			b.ReportMetric(100*float64(busiest)/float64(total), "busiest-master-%")
		}
	}
}

// commandsPerMaster returns how many commands each master of a cluster
// has run, by its address (nothing for a single server).
func commandsPerMaster(b *testing.B, c redis.UniversalClient) map[string]int64 {
	cc, ok := c.(*redis.ClusterClient)
	if !ok {
		return nil
	}
	var mu sync.Mutex
	out := map[string]int64{}
	err := cc.ForEachMaster(context.Background(), func(ctx context.Context, m *redis.Client) error {
		info, err := m.Info(ctx, "stats").Result()
		if err != nil {
			return err
		}
		for _, line := range strings.Split(info, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "total_commands_processed:"); ok {
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					return err
				}
				mu.Lock()
				out[m.Options().Addr] = n
				mu.Unlock()
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return out
}
