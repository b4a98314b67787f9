package client

import (
	"context"
	"crypto/rand"
	"fmt"
	"iter"
	"time"

	"github.com/validmail/validmail/emailcheck"
)

// MaxBatch is the most addresses one batch holds.
const MaxBatch = 1000

// ValidateList validates any number of addresses through batches and
// yields the results in input order. It reads up to 1,000 addresses,
// submits them as a batch under an Idempotency-Key of its own (so a
// submission retried after a network error charges nothing more), reads
// the next 1,000 and submits them while the first batch runs, waits for
// each batch by polling it (backing off to at most a poll a second) and
// yields its results. When ctx ends or a call fails for good it yields
// the error once and stops.
func (c *Client) ValidateList(ctx context.Context, emails iter.Seq[string]) iter.Seq2[emailcheck.Result, error] {
	return func(yield func(emailcheck.Result, error) bool) {
		next, stop := iter.Pull(emails)
		defer stop()
		chunk := func() []string {
			var out []string
			for len(out) < MaxBatch {
				e, ok := next()
				if !ok {
					break
				}
				out = append(out, e)
			}
			return out
		}
		run := rand.Text()
		n := 0
		submit := func(list []string) (Submission, error) {
			n++
			return c.SubmitBatch(ctx, list, fmt.Sprintf("list-%s-%d", run, n))
		}
		cur := chunk()
		if len(cur) == 0 {
			return
		}
		sub, err := submit(cur)
		for {
			if err != nil {
				yield(emailcheck.Result{}, err)
				return
			}
			// Submit the next chunk before waiting for this one.
			following := chunk()
			var nextSub Submission
			var nextErr error
			if len(following) > 0 {
				nextSub, nextErr = submit(following)
			}
			if err := c.waitBatch(ctx, sub.BatchID); err != nil {
				yield(emailcheck.Result{}, err)
				return
			}
			cursor := ""
			for {
				page, err := c.Results(ctx, sub.BatchID, MaxBatch, cursor)
				if err != nil {
					yield(emailcheck.Result{}, err)
					return
				}
				for _, r := range page.Results {
					if r.Result == nil {
						yield(emailcheck.Result{}, fmt.Errorf("validmail: job %s has no result", r.JobID))
						return
					}
					if !yield(*r.Result, nil) {
						return
					}
				}
				if page.NextCursor == nil {
					break
				}
				cursor = *page.NextCursor
			}
			if len(following) == 0 {
				return
			}
			sub, err = nextSub, nextErr
		}
	}
}

// waitBatch polls a batch until it completes, backing off from 100 ms to
// a second between polls.
func (c *Client) waitBatch(ctx context.Context, id string) error {
	wait := c.pollWait
	for {
		b, err := c.Batch(ctx, id)
		if err != nil {
			return err
		}
		if b.State == "completed" {
			return nil
		}
		if err := c.sleep(ctx, wait); err != nil {
			return err
		}
		wait = min(wait*2, time.Second)
	}
}
