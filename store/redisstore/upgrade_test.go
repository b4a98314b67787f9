package redisstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/validmail/validmail/jobs/jobsdriver"
	"github.com/validmail/validmail/store"
	"github.com/validmail/validmail/store/redisstore"
)

// previousRelease writes, under a fresh prefix of c, the store that
// testdata/layout1.json holds: a faithful copy of the keys the release
// before the marker and the layout stamp wrote (every key under
// "{prefix}", no marker, no stamp), with an account, its key, a balance
// of 148 and a batch of four jobs, two of them still queued.
func previousRelease(t *testing.T, c redis.UniversalClient) string {
	t.Helper()
	prefix := "vmtest-" + uuid.NewString()
	t.Cleanup(func() { deleteKeys(t, c, prefix) })
	loadDump(t, c, "testdata/layout1.json", "oldlayout", prefix)
	return prefix
}

// checkPreviousData checks that s serves the previous release's account,
// key, balance and queued jobs.
func checkPreviousData(t *testing.T, s *redisstore.Store) {
	t.Helper()
	ctx := t.Context()
	if k, err := s.Authenticate(ctx, layout1Secret); err != nil || k.AccountID != layout1Account {
		t.Fatalf("the previous release's key: %+v, %v", k, err)
	}
	if a, err := s.GetAccountByEmail(ctx, "old@example.com"); err != nil || a.ID != layout1Account {
		t.Fatalf("the previous release's account: %+v, %v", a, err)
	}
	if bal, err := s.Balance(ctx, layout1Account); err != nil || bal != 148 {
		t.Fatalf("the previous release's balance: %d, %v; want 148", bal, err)
	}
	if b, err := s.Batch(ctx, layout1Account, "1"); err != nil || b.Total != 4 || b.Completed != 2 {
		t.Fatalf("the previous release's batch: %+v, %v", b, err)
	}
	ls, err := s.Lease(ctx, jobsdriver.LeaseParams{Max: 10, Duration: time.Minute})
	if err != nil || len(ls) != 2 {
		t.Fatalf("the previous release's queued jobs: %+v, %v; want 2", ls, err)
	}
}

// The previous release's store, with no marker, is adopted at start
// without Init: marker written, layout stamped, both logged, and every
// account, key, balance and queued job served. On a server and on a
// cluster.
func TestUpgradeAdoptsPreviousRelease(t *testing.T) {
	for name, c := range map[string]func(t *testing.T) redis.UniversalClient{
		"server":  func(t *testing.T) redis.UniversalClient { return client(t) },
		"cluster": func(t *testing.T) redis.UniversalClient { return clusterClient(t) },
	} {
		t.Run(name, func(t *testing.T) {
			c := c(t)
			ctx := t.Context()
			prefix := previousRelease(t, c)
			var logs logBuffer
			s, err := redisstore.New(c, &redisstore.Config{Prefix: prefix, Logger: logs.logger()})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Setup(ctx); err != nil {
				t.Fatalf("Setup of the previous release's store: %v", err)
			}
			for _, want := range []string{"previous release's store adopted", "layout stamped"} {
				if !strings.Contains(logs.String(), want) {
					t.Errorf("no log line %q:\n%s", want, logs.String())
				}
			}
			if n, err := c.Exists(ctx, "{"+prefix+"}marker").Result(); err != nil || n != 1 {
				t.Fatalf("no marker after the adoption: %d, %v", n, err)
			}
			if v, err := s.LayoutVersion(ctx); err != nil || v != redisstore.LayoutVersion {
				t.Fatalf("layout %d, %v; want %d", v, err, redisstore.LayoutVersion)
			}
			checkPreviousData(t, s)

			// A second instance starts on the adopted store as on any.
			var logs2 logBuffer
			s2, err := redisstore.New(c, &redisstore.Config{Prefix: prefix, Logger: logs2.logger()})
			if err != nil {
				t.Fatal(err)
			}
			if err := s2.Setup(ctx); err != nil {
				t.Fatal(err)
			}
			if strings.Contains(logs2.String(), "adopted") || strings.Contains(logs2.String(), "stamped") {
				t.Errorf("the second start adopted or stamped again:\n%s", logs2.String())
			}

			// Once stamped, a missing marker is a loss again, accounts or
			// not: the stamp tells this store from a previous release's.
			if err := c.Del(ctx, "{"+prefix+"}marker").Err(); err != nil {
				t.Fatal(err)
			}
			s3, err := redisstore.New(c, &redisstore.Config{Prefix: prefix})
			if err != nil {
				t.Fatal(err)
			}
			if err := s3.Setup(ctx); !errors.Is(err, store.ErrDataLost) {
				t.Fatalf("a stamped store without its marker: %v, want ErrDataLost", err)
			}
			if n, err := c.Exists(ctx, "{"+prefix+"}marker").Result(); err != nil || n != 0 {
				t.Fatalf("the refused store got a marker: %d, %v", n, err)
			}
		})
	}
}

// A store stamped by a newer release is refused, with or without Init,
// by Setup and Migrate alike, and left as it is.
func TestLayoutTooNewRefused(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, c, prefix := setup(t, nil)
	if _, err := s.CreateAccount(ctx, store.CreateAccountParams{Email: "a@example.com"}); err != nil {
		t.Fatal(err)
	}
	newer := redisstore.LayoutVersion + 1
	if err := c.Set(ctx, "{"+prefix+"}layout", newer, 0).Err(); err != nil {
		t.Fatal(err)
	}
	before := scanPrefix(t, c, prefix)
	marker := c.Get(ctx, "{"+prefix+"}marker").Val()
	for _, cfg := range []redisstore.Config{{}, {Init: true}, {SkipMigrate: true}} {
		var logs logBuffer
		cfg.Prefix, cfg.Logger = prefix, logs.logger()
		r, err := redisstore.New(c, &cfg)
		if err != nil {
			t.Fatal(err)
		}
		err = r.Setup(ctx)
		if !errors.Is(err, redisstore.ErrLayoutTooNew) || !errors.Is(err, store.ErrTooNew) {
			t.Fatalf("%+v: Setup of a newer store: %v, want ErrLayoutTooNew and store.ErrTooNew", cfg, err)
		}
		if !strings.Contains(err.Error(), "layout version 3, this release knows 2") || !strings.Contains(err.Error(), "restore the backup") {
			t.Errorf("the refusal does not say what to do: %v", err)
		}
		if err := r.Migrate(ctx); !errors.Is(err, redisstore.ErrLayoutTooNew) {
			t.Fatalf("%+v: Migrate of a newer store: %v, want ErrLayoutTooNew", cfg, err)
		}
		if _, err := r.Authenticate(ctx, "vm_live_"+strings.Repeat("A", 43)); !errors.Is(err, redisstore.ErrLayoutTooNew) {
			t.Fatalf("%+v: a request on a newer store: %v, want ErrLayoutTooNew", cfg, err)
		}
		if !strings.Contains(logs.String(), "newer than this release") {
			t.Errorf("the refusal was not logged:\n%s", logs.String())
		}
	}
	if v := c.Get(ctx, "{"+prefix+"}layout").Val(); v != "3" {
		t.Fatalf("the stamp became %q", v)
	}
	if m := c.Get(ctx, "{"+prefix+"}marker").Val(); m != marker {
		t.Fatalf("the marker changed: %q, was %q", m, marker)
	}
	if after := scanPrefix(t, c, prefix); len(after) != len(before) {
		t.Fatalf("the refused store's keys changed: %q, was %q", after, before)
	}
}

// With SkipMigrate, a store that needs its layout stamped or a previous
// release's data adopted is refused until Migrate runs; Migrate then
// does both, and the store serves.
func TestSkipMigrate(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	c := client(t)
	prefix := previousRelease(t, c)
	skip, err := redisstore.New(c, &redisstore.Config{Prefix: prefix, SkipMigrate: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := skip.Setup(ctx); !errors.Is(err, redisstore.ErrLayoutOutdated) || !errors.Is(err, store.ErrNeedsMigration) || !strings.Contains(err.Error(), "validmaild migrate") {
		t.Fatalf("SkipMigrate on the previous release's store: %v, want ErrLayoutOutdated naming validmaild migrate", err)
	}
	if n, err := c.Exists(ctx, "{"+prefix+"}marker", "{"+prefix+"}layout").Result(); err != nil || n != 0 {
		t.Fatalf("SkipMigrate wrote %d keys, %v", n, err)
	}
	var logs logBuffer
	m, err := redisstore.New(c, &redisstore.Config{Prefix: prefix, Logger: logs.logger(), SkipMigrate: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Migrate(ctx); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	if !strings.Contains(logs.String(), "adopted") || !strings.Contains(logs.String(), "layout stamped") {
		t.Errorf("Migrate did not log its steps:\n%s", logs.String())
	}
	if err := m.Migrate(ctx); err != nil {
		t.Fatalf("Migrate again: %v", err)
	}
	if err := skip.Setup(ctx); err != nil {
		t.Fatalf("SkipMigrate after Migrate: %v", err)
	}
	checkPreviousData(t, skip)

	// A store that has its marker but no stamp (written before the
	// stamp) is outdated too.
	s, c2, prefix2 := setup(t, nil)
	if err := s.Setup(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c2.Del(ctx, "{"+prefix2+"}layout").Err(); err != nil {
		t.Fatal(err)
	}
	r, err := redisstore.New(c2, &redisstore.Config{Prefix: prefix2, SkipMigrate: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Setup(ctx); !errors.Is(err, redisstore.ErrLayoutOutdated) {
		t.Fatalf("SkipMigrate on an unstamped store: %v, want ErrLayoutOutdated", err)
	}
	// An empty prefix is not adopted: it is still new or lost.
	empty, err := redisstore.New(c2, &redisstore.Config{Prefix: "vmtest-" + uuid.NewString()})
	if err != nil {
		t.Fatal(err)
	}
	if err := empty.Migrate(context.WithoutCancel(ctx)); !errors.Is(err, store.ErrDataLost) {
		t.Fatalf("Migrate of an empty prefix without Init: %v, want ErrDataLost", err)
	}
}
