package redisstore_test

import (
	"testing"
	"time"

	"github.com/validmail/validmail/jobs/jobsdriver"
	"github.com/validmail/validmail/jobs/jobtype"
)

// TestUnjudgedStoredBefore: a job that a release before the unjudged
// field handed back after unjudged attempts holds the count at the end
// of its last error only; it is leased with that count after the
// upgrade. A job retried since carries the field, which wins.
func TestUnjudgedStoredBefore(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, c, _ := setup(t, nil)
	ids, err := s.Enqueue(ctx, jobtype.EnqueueParams{AccountID: "acct", Emails: []string{"a@example.org", "b@example.org", "c@example.org"}})
	if err != nil {
		t.Fatal(err)
	}
	ls, err := s.Lease(ctx, jobsdriver.LeaseParams{Max: 10, Duration: time.Minute})
	if err != nil || len(ls) != len(ids) {
		t.Fatalf("leased %d, %v", len(ls), err)
	}
	lastErrors := map[string]string{
		ids[0]: "no nameserver answered for the domain (unjudged attempt 2 of 3)",
		ids[1]: "lease expired",
		ids[2]: "the domain's nameservers answered with a failure (unjudged attempt 1 of 3)",
	}
	for _, l := range ls {
		if err := s.Retry(ctx, jobsdriver.RetryParams{ID: l.ID, Token: l.Token, Error: lastErrors[l.ID], Unjudged: 7}); err != nil {
			t.Fatal(err)
		}
	}
	// The first two as the previous release left them: no field.
	for _, id := range ids[:2] {
		if err := c.HDel(ctx, s.KeyName("acct", "job:"+id), "unjudged").Err(); err != nil {
			t.Fatal(err)
		}
	}
	ls, err = s.Lease(ctx, jobsdriver.LeaseParams{Max: 10, Duration: time.Minute})
	if err != nil || len(ls) != len(ids) {
		t.Fatalf("leased %d, %v", len(ls), err)
	}
	want := map[string]int{ids[0]: 2, ids[1]: 0, ids[2]: 7}
	for _, l := range ls {
		if l.Unjudged != want[l.ID] || l.LastError != lastErrors[l.ID] {
			t.Errorf("job %s: unjudged %d, last error %q; want %d", l.ID, l.Unjudged, l.LastError, want[l.ID])
		}
	}
}
