package redisstore_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/validmail/validmail/jobs/jobsdriver"
	"github.com/validmail/validmail/jobs/jobtype"
)

// TestListAbandoned stages a list whose uploader dies before the commit:
// nothing shows, and once the list's deadline passes Cleanup removes its
// staged jobs and rows, leaving no key of it behind.
func TestListAbandoned(t *testing.T) {
	ctx := t.Context()
	s, c, prefix := setup(t, nil)
	before := listKeyCount(t, c, prefix)
	w, err := s.BeginList(ctx, jobtype.BeginListParams{AccountID: "acct", Header: []string{"email"}, Rows: 2500, Charge: true})
	if err != nil {
		t.Fatal(err)
	}
	rows := make([]jobtype.ListRow, 2500)
	for i := range rows {
		e := fmt.Sprintf("u%d@example.org", i%2000)
		rows[i] = jobtype.ListRow{N: i, Record: []string{e}, Email: e, Key: e}
	}
	if err := w.Append(ctx, rows); err != nil {
		t.Fatal(err)
	}
	if listKeyCount(t, c, prefix) < before+2000 {
		t.Fatal("nothing staged")
	}
	if ls, err := s.Lease(ctx, jobsdriver.LeaseParams{Max: 10, Duration: time.Minute}); err != nil || len(ls) != 0 {
		t.Fatalf("leased %d staged jobs, %v", len(ls), err)
	}
	// Cleanup leaves a list within its deadline alone.
	if _, err := s.Cleanup(ctx, jobsdriver.CleanupParams{CompletedBefore: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if listKeyCount(t, c, prefix) < before+2000 {
		t.Fatal("Cleanup removed a list still staging")
	}
	// Its deadline passes.
	for _, k := range keysLike(t, c, prefix+"*lstpending") {
		c.ZAddXX(ctx, k, redis.Z{Score: 1, Member: mustMember(t, c, k)})
	}
	if _, err := s.Cleanup(ctx, jobsdriver.CleanupParams{CompletedBefore: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if n := listKeyCount(t, c, prefix); n != before {
		t.Fatalf("%d keys after the abandoned list's removal; want %d: %v", n, before, keysLike(t, c, prefix+"*"))
	}
}

func keysLike(t *testing.T, c *redis.Client, pattern string) []string {
	ks, err := c.Keys(t.Context(), "*"+pattern).Result()
	if err != nil {
		t.Fatal(err)
	}
	return ks
}

func listKeyCount(t *testing.T, c *redis.Client, prefix string) int {
	n := 0
	for _, k := range keysLike(t, c, prefix+"*") {
		if t, _ := c.Type(context.Background(), k).Result(); t != "none" && !strings.HasSuffix(k, "lstpending") && !strings.HasSuffix(k, "seq:job") {
			n++
		}
	}
	return n
}

func mustMember(t *testing.T, c *redis.Client, k string) string {
	m, err := c.ZRange(t.Context(), k, 0, 0).Result()
	if err != nil || len(m) == 0 {
		t.Fatalf("no member of %s: %v", k, err)
	}
	return m[0]
}
