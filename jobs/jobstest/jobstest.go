// Package jobstest is the conformance suite for [jobsdriver.Driver] backends.
// [Run] takes a constructor of fresh [Backend] harnesses: the driver, the
// credits storage it charges and the events its completions record; a
// deployment's backend runs it through storetest.RunBackend. A backend
// that keeps its data outside the process also runs [RunCrash], which kills
// a worker process mid-batch and checks that a new one finishes every job
// exactly once with exact credit accounting; [Bench] measures enqueue and
// drain throughput the same way for every backend.
package jobstest

import (
	"context"
	"fmt"
	"math/big"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/jobs"
	"github.com/validmail/validmail/jobs/jobsdriver"
	"github.com/validmail/validmail/webhook"
)

// Backend is what the suite needs of a backend: the queue's storage, the
// ledger's storage it charges and refunds in the same atomic steps, and
// the events its completions record. storetest.RunBackend makes one from
// a deployment's backend.
type Backend struct {
	// Driver is the queue storage under test.
	Driver jobsdriver.Driver
	// Credits is the ledger storage the driver charges and refunds.
	Credits credits.Store
	// Events returns the outbox events recorded for an account by
	// completions, with their ID, Type, CreatedAt and Payload as written.
	Events func(ctx context.Context, account string) ([]webhook.Event, error)
}

// check fails tb unless every field of be is set.
func (be Backend) check(tb testing.TB) Backend {
	tb.Helper()
	if be.Driver == nil || be.Credits == nil || be.Events == nil {
		tb.Fatal("jobstest: the Backend needs Driver, Credits and Events")
	}
	return be
}

// Run checks that backends made by newBackend behave as [jobsdriver.Driver]
// (and, when implemented, [jobsdriver.ChargingDriver] and [jobsdriver.Notifier])
// promise. Each subtest runs in parallel with its own backend from
// newBackend; the suite's assertions about leasing assume that no other
// test enqueues jobs into the same backend, so return a fresh namespace
// every time.
func Run(t *testing.T, newBackend func(tb testing.TB) Backend) {
	tests := []struct {
		name string
		f    func(t *testing.T, b *bundle)
	}{
		{"EnqueueIDsIncrease", testEnqueueIDs},
		{"GetWithinAccount", testGetWithinAccount},
		{"UnusualAddresses", testUnusualAddresses},
		{"Batches", testBatches},
		{"BatchEventOnce", testBatchEventOnce},
		{"EventBytes", testEventBytes},
		{"BatchPagingWhileCompleting", testBatchPagingWhileCompleting},
		{"BatchSource", testBatchSource},
		{"IdempotencyExpires", testIdempotencyExpires},
		{"EnqueueChargedInsufficient", testChargedInsufficient},
		{"EnqueueChargedIdempotent", testChargedIdempotent},
		{"EnqueueChargedFingerprint", testChargedFingerprint},
		{"LeaseIsExclusive", testLeaseExclusive},
		{"FairAcrossAccounts", testFairAcrossAccounts},
		{"RetryTakesNewTurn", testRetryTakesNewTurn},
		{"PoolServesQuietAccount", testPoolServesQuietAccount},
		{"NewcomerNoHeadStart", testNewcomerNoHeadStart},
		{"DueJobsTakeTurns", testDueJobsTakeTurns},
		{"DeferredIntoThePast", testDeferredIntoThePast},
		{"DeferManyIndependent", testDeferManyIndependent},
		{"ListTakesTurns", testListTakesTurns},
		{"ManyAccountsTakeTurns", testManyAccountsTakeTurns},
		{"LeasersGiveBackEveryWay", testLeasersGiveBackEveryWay},
		{"DrainByPool", testDrainByPool},
		{"ConcurrentWorkersCompleteOnce", testConcurrentWorkers},
		{"UnknownRefundedWithEvent", testUnknownRefund},
		{"DuplicateEventChangesNothing", testDuplicateEvent},
		{"CompleteManyItemsIndependent", testCompleteMany},
		{"CrashedWorkerRescued", testCrashRescue},
		{"CrashedWorkerRecoveredByPool", testCrashPool},
		{"RescueAfterCompleteKeepsResult", testRescueRace},
		{"RescueRaceConcurrent", testRescueRaceConcurrent},
		{"Heartbeat", testHeartbeat},
		{"QueueStats", testQueueStats},
		{"RetryBackoff", testRetry},
		{"RetryUnjudged", testRetryUnjudged},
		{"RetriesExhaustedCompleteUnknown", testExhausted},
		{"Cleanup", testCleanup},
		{"DeleteBatch", testDeleteBatch},
		{"PoolDrainsOnCancel", testPoolDrain},
		{"NotifierWakesPool", testNotifier},
		{"ContextCanceled", testCanceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			be := newBackend(t).check(t)
			q, err := jobs.NewQueue(be.Driver, credits.New(be.Credits, nil), nil)
			if err != nil {
				t.Fatal(err)
			}
			tt.f(t, &bundle{Backend: be, q: q, ledger: credits.New(be.Credits, nil)})
		})
	}
}

type bundle struct {
	Backend
	q      *jobs.Queue
	ledger *credits.Ledger
}

func account() string { return "acct-" + uuid.NewString() }

func emails(n int, tag string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("user%d-%s@example.org", i, tag)
	}
	return out
}

// validatorFunc adapts a function to [jobs.Validator].
type validatorFunc func(ctx context.Context, email string) (emailcheck.Result, error)

func (f validatorFunc) Validate(ctx context.Context, email string, _ ...emailcheck.CallOption) (emailcheck.Result, error) {
	return f(ctx, email)
}

func likely(_ context.Context, email string) (emailcheck.Result, error) {
	r := emailcheck.Result{Email: email}
	r.Confidence.Status = emailcheck.StatusLikely
	r.Confidence.Score = 90
	return r, nil
}

// checkIncreasing fails t unless ids are numeric text, strictly increasing.
func checkIncreasing(t *testing.T, ids []string) {
	t.Helper()
	var prev *big.Int
	for _, id := range ids {
		n, ok := new(big.Int).SetString(id, 10)
		if !ok || n.Sign() < 0 || n.String() != id {
			t.Fatalf("id %q is not canonical numeric text", id)
		}
		if prev != nil && n.Cmp(prev) <= 0 {
			t.Fatalf("id %s does not follow %s", id, prev)
		}
		prev = n
	}
}

func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func mustEnqueue(t *testing.T, b *bundle, acct string, n int) []string {
	t.Helper()
	ids, err := b.q.Enqueue(context.Background(), acct, emails(n, acct))
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != n {
		t.Fatalf("Enqueue returned %d ids, want %d", len(ids), n)
	}
	return ids
}

func mustLease(t *testing.T, b *bundle, max int, d time.Duration) []jobsdriver.Lease {
	t.Helper()
	ls, err := b.Driver.Lease(context.Background(), jobsdriver.LeaseParams{Max: max, Duration: d})
	if err != nil {
		t.Fatal(err)
	}
	return ls
}

func balance(t *testing.T, b *bundle, acct string) int64 {
	t.Helper()
	n, err := b.ledger.Balance(context.Background(), acct)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func grant(t *testing.T, b *bundle, acct string, n int64) {
	t.Helper()
	if _, err := b.ledger.Grant(context.Background(), acct, n, ""); err != nil {
		t.Fatal(err)
	}
}
