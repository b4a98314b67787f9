package redisstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/validmail/validmail/jobs/jobsdriver"
	"github.com/validmail/validmail/jobs/jobtype"
	"github.com/validmail/validmail/store/redisstore"
)

// TestLeaseFindsShardsAfterClockStep: two instances share a store; one
// works through an account's long list while a second account's batch
// arrives through the other, in another shard. The first finds it and
// serves it in turn within moments, also when its host's wall clock has
// just stepped back (a correction of the time).
func TestLeaseFindsShardsAfterClockStep(t *testing.T) {
	t.Parallel()
	for _, step := range []time.Duration{0, time.Hour} {
		t.Run(fmt.Sprintf("clock stepped back %v", step), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			a, _, prefix := setup(t, nil)
			b := openPrefix(t, prefix)
			const big = "acct-big"
			small := ""
			for i := 0; small == ""; i++ {
				if c := fmt.Sprintf("acct-small-%d", i); redisstore.FirstJobID(c) != redisstore.FirstJobID(big) {
					small = c
				}
			}
			em := make([]string, 2000)
			for i := range em {
				em[i] = fmt.Sprintf("u%d@example.org", i)
			}
			if _, err := b.Enqueue(ctx, jobtype.EnqueueParams{AccountID: big, Emails: em}); err != nil {
				t.Fatal(err)
			}
			if _, err := b.Lease(ctx, jobsdriver.LeaseParams{Max: 2, Duration: time.Minute}); err != nil {
				t.Fatal(err)
			}
			redisstore.StepClockBack(b, step)
			if _, err := a.Enqueue(ctx, jobtype.EnqueueParams{AccountID: small, Emails: em[:10]}); err != nil {
				t.Fatal(err)
			}
			// Taking turns by shard, the small batch is out within a few
			// leases once b looks again which shards hold work (every
			// 100 ms); 10 s is for a busy machine. The list's 2,000 jobs
			// outlast it.
			got := 0
			for deadline := time.Now().Add(10 * time.Second); got < 10; {
				if time.Now().After(deadline) {
					t.Fatalf("%d of the second account's 10 jobs leased in 10 s by the instance working through the list", got)
				}
				ls, err := b.Lease(ctx, jobsdriver.LeaseParams{Max: 2, Duration: time.Minute})
				if err != nil {
					t.Fatal(err)
				}
				for _, l := range ls {
					if l.AccountID == small {
						got++
					}
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
}

// TestShardDownMarkAfterClockStep: a shard that failed is left alone for
// a moment, not for as long as the wall clock stepped back since.
func TestShardDownMarkAfterClockStep(t *testing.T) {
	now := time.Now().UnixMicro()
	backoff := (250 * time.Millisecond).Microseconds()
	for _, tt := range []struct {
		name  string
		until int64
		want  bool
	}{
		{"marked just now", now + backoff, true},
		{"marked a moment ago", now + backoff/2, true},
		{"expired", now - 1, false},
		{"marked before the clock stepped back an hour", now + backoff + time.Hour.Microseconds(), false},
	} {
		if got := redisstore.DownAt(tt.until, now); got != tt.want {
			t.Errorf("%s: down %v, want %v", tt.name, got, tt.want)
		}
	}
}
