package main

import (
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/validmail/validmail/store"
)

// envPreviousRelease names the variable holding the path of the previous
// release's validmaild binary (.ci/run builds it from its tag with git
// worktree).
const envPreviousRelease = "VALIDMAIL_TEST_PREVIOUS_RELEASE"

// The previous release's store, written by its own binary, is served by
// this release without -store-init: accounts, keys, balances and queued
// jobs intact, the queued jobs then worked through. A store stamped
// newer than this release knows is refused.
func TestUpgradeFromPreviousRelease(t *testing.T) {
	prev := os.Getenv(envPreviousRelease)
	if prev == "" {
		t.Skip(envPreviousRelease + " is not set: skipping the upgrade from the previous release's binary")
	}
	if _, err := os.Stat(prev); err != nil {
		t.Fatalf("%s: %v", envPreviousRelease, err)
	}
	// The previous release opens no Redis Cluster.
	for _, st := range []testStore{{"postgres", freshPostgres}, {"redis", emptyRedis}} {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			url := st.fresh(t)
			key := store.NewSecret()
			// The previous release: an account with a key and 500 credits,
			// one validation answered and a batch of three queued (no
			// workers run).
			old := startBinary(t, prev, "-store", url, "-workers", "0", "-dns", "127.0.0.1:1",
				"-bootstrap-email", "old@example.com", "-bootstrap-key", key, "-bootstrap-credits", "500")
			c := client{t, old.base, key}
			if resp, m := c.do("GET", "/validate?email=single@example.com", nil); resp.StatusCode != 200 {
				t.Fatalf("previous release, GET /validate: %d %v", resp.StatusCode, m)
			}
			resp, m := c.do("POST", "/validate/async", map[string]any{"emails": []string{"a@example.com", "b@example.org", "c@example.net"}})
			if resp.StatusCode != http.StatusAccepted {
				t.Fatalf("previous release, POST /validate/async: %d %v", resp.StatusCode, m)
			}
			var ids []string
			for _, id := range m["job_ids"].([]any) {
				ids = append(ids, id.(string))
			}
			old.stop()

			// This release, without -store-init and without workers: the
			// store is adopted (Redis) or migrated (PostgreSQL), and
			// everything is where the previous release left it.
			cur := start(t, "-store", url, "-workers", "0", "-dns", "127.0.0.1:1")
			if st.name == "redis" && cur.record("redisstore: a previous release's store adopted: its accounts are there but it had no marker; marker written") == nil {
				t.Errorf("no log line of the adoption:\n%s", cur.stderr())
			}
			c = client{t, cur.base, key}
			if resp, m := c.do("GET", "/api/v1/account", nil); resp.StatusCode != 200 || m["balance"] != float64(496) {
				t.Fatalf("this release, the previous release's account: %d %v, want balance 496", resp.StatusCode, m)
			}
			for _, id := range ids {
				if resp, m := c.do("GET", "/validate/status/"+id, nil); resp.StatusCode != 200 || m["state"] != "active" {
					t.Fatalf("this release, queued job %s: %d %v, want active", id, resp.StatusCode, m)
				}
			}
			cur.stop()

			// With workers, the queued jobs are done.
			cur = start(t, "-store", url, "-workers", "2", "-dns", "127.0.0.1:1")
			c = client{t, cur.base, key}
			for _, id := range ids {
				if res := c.poll(id)["result"].(map[string]any); status(res) != "INVALID" {
					t.Errorf("job %s: %s, want INVALID (a reserved domain)", id, status(res))
				}
			}
			cur.stop()

			// A newer release's stamp: this release refuses the store.
			stampNewer(t, st.name, url)
			_, stderr, code := runBinary(t, "-addr", "127.0.0.1:0", "-metrics-addr", "127.0.0.1:0", "-workers", "0", "-store", url)
			if code != 1 || !strings.Contains(stderr, "newer release") {
				t.Fatalf("this release on a store stamped newer: exit %d\n%s", code, stderr)
			}
		})
	}
}
