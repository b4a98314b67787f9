package main

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/validmail/validmail/emailcheck/dnstest"
	"github.com/validmail/validmail/store"
)

// TestLoadDrain measures the queue's drain through validmaild on
// PostgreSQL and Redis: 20 batches of 1,000 addresses on a cached domain
// are accepted by an instance without workers, then an instance with 8
// workers works through them; the figure is jobs over the time from the
// second instance listening to the last batch completed (polled through
// the API every 20 ms).
func TestLoadDrain(t *testing.T) {
	skipUnlessLoad(t)
	const batches, size, workers = 20, 1000, 8
	dnsSrv := dnstest.Start(t, zone(), nil)
	for _, st := range []testStore{{"postgres", freshPostgres}, {"redis", freshRedis}} {
		t.Run(st.name, func(t *testing.T) {
			url := st.fresh(t)
			key := store.NewSecret()
			args := []string{"-store", url, "-dns", dnsSrv.Addr(), "-log-level", "info", "-rate-limit", "-1",
				"-bootstrap-email", "drain@example.com", "-bootstrap-key", key, "-bootstrap-credits", fmt.Sprint(batches * size)}
			accept := start(t, append(args, "-workers", "0")...)
			c := client{t, accept.base, key}
			var ids []string
			for b := range batches {
				emails := make([]string, size)
				for i := range emails {
					emails[i] = fmt.Sprintf("user%d.%d@gmail.com", b, i)
				}
				resp, m := c.do("POST", "/validate/async", map[string]any{"emails": emails})
				if resp.StatusCode != http.StatusAccepted {
					t.Fatalf("POST /validate/async: %d %v", resp.StatusCode, m)
				}
				ids = append(ids, m["batch_id"].(string))
			}
			accept.stop()

			began := time.Now()
			work := start(t, append(args, "-workers", fmt.Sprint(workers))...)
			listening := time.Now()
			c.base = work.base
			deadline := listening.Add(10 * time.Minute)
			for _, id := range ids {
				for {
					resp, m := c.do("GET", "/api/v1/batches/"+id, nil)
					if resp.StatusCode != http.StatusOK {
						t.Fatalf("GET /api/v1/batches/%s: %d %v", id, resp.StatusCode, m)
					}
					if m["state"] == "completed" {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("batch %s not completed after 10 minutes: %v", id, m)
					}
					time.Sleep(20 * time.Millisecond)
				}
			}
			took := time.Since(listening)
			t.Logf("drain through validmaild, %s, %d batches of %d, %d workers: %.0f jobs/s (%.2f s from listening, start took %v)",
				st.name, batches, size, workers, float64(batches*size)/took.Seconds(), took.Seconds(), listening.Sub(began).Round(time.Millisecond))
			work.stop()
		})
	}
}
