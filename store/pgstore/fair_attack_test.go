package pgstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/validmail/validmail/jobs"
)

// TestPromoteAfterClockStep: the host's wall clock steps back (an NTP
// correction) after a lease; a job handed back for a moment still comes
// back within a moment, not when the clock has caught up again.
func TestPromoteAfterClockStep(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t)
	ids, err := s.Enqueue(ctx, jobs.EnqueueParams{AccountID: "acct", Emails: []string{"a@example.org"}})
	if err != nil {
		t.Fatal(err)
	}
	ls, err := s.Lease(ctx, jobs.LeaseParams{Max: 1, Duration: time.Minute})
	if err != nil || len(ls) != 1 {
		t.Fatalf("lease: %v %v", ls, err)
	}
	if err := s.Retry(ctx, jobs.RetryParams{ID: ls[0].ID, Token: ls[0].Token, RunAt: time.Now().Add(200 * time.Millisecond)}); err != nil {
		t.Fatal(err)
	}
	s.StepClockBack(time.Hour)
	deadline := time.Now().Add(30 * time.Second)
	for {
		ls, err := s.Lease(ctx, jobs.LeaseParams{Max: 1, Duration: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if len(ls) == 1 && ls[0].ID == ids[0] {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("a job handed back for 200 ms was not leased again within 30 s after the wall clock stepped back an hour")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
