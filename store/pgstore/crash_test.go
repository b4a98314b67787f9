package pgstore_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/jobs"
	"github.com/validmail/validmail/store"
	"github.com/validmail/validmail/store/pgstore"
	"github.com/validmail/validmail/webhook"
)

// envCrashSchema gives the crash test's child process its schema.
const (
	envCrashSchema = "VALIDMAIL_CRASH_SCHEMA"
)

const crashJobs = 1000

// crashEmail is the address of job i; every tenth comes back UNKNOWN and is
// refunded.
func crashEmail(i int) string { return fmt.Sprintf("user%d@crash.example.org", i) }

func crashUnknown(email string) bool {
	n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(email, "user"), "@crash.example.org"))
	return n%10 == 3
}

// crashValidator answers deterministically, a little slowly, without DNS.
type crashValidator struct{}

func (crashValidator) Validate(ctx context.Context, email string, _ ...emailcheck.CallOption) (emailcheck.Result, error) {
	time.Sleep(2 * time.Millisecond)
	r := emailcheck.Result{Email: email}
	r.Confidence.Status = emailcheck.StatusLikely
	r.Confidence.Score = 90
	if crashUnknown(email) {
		r.Confidence.Status = emailcheck.StatusUnknown
		r.Confidence.Score = 0
	}
	return r, nil
}

// TestCrashChild is the worker process of TestCrashRecovery: it works the
// schema's jobs until none is left.
func TestCrashChild(t *testing.T) {
	schema := os.Getenv(envCrashSchema)
	if schema == "" {
		t.Skip("runs only as a child of TestCrashRecovery")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := pgstore.New(ctx, testPool(t), &pgstore.Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	q, err := jobs.NewQueue(s, credits.New(s, nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := jobs.NewPool(q, crashValidator{}, &jobs.PoolConfig{
		Workers:        8,
		LeaseDuration:  time.Second,
		RescueInterval: 200 * time.Millisecond,
		PollInterval:   100 * time.Millisecond,
		NewEvent: func(_ context.Context, j jobs.Job, _ emailcheck.Result) (*jobs.Event, error) {
			return &jobs.Event{ID: "evt_" + j.ID, Type: webhook.TypeValidationCompleted, Payload: []byte(`{"job_id":"` + j.ID + `"}`)}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	for {
		var active int
		err := testPool(t).QueryRow(ctx, `SELECT count(*) FROM "`+schema+`".jobs WHERE state <> 'completed'`).Scan(&active)
		if err != nil {
			t.Fatal(err)
		}
		if active == 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestCrashRecovery kills a worker process with SIGKILL in the middle of a
// batch, lets a new one finish, and checks that every job completed once
// and that the balance is exact.
func TestCrashRecovery(t *testing.T) {
	if os.Getenv(envCrashSchema) != "" {
		t.Skip("in a child process")
	}
	if testing.Short() {
		t.Skip("starts processes")
	}
	t.Parallel()
	pool := testPool(t)
	schema := testSchema(t, pool)
	ctx := context.Background()
	s, err := pgstore.New(ctx, pool, &pgstore.Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	a, err := s.CreateAccount(ctx, store.CreateAccountParams{Email: "crash@example.org"})
	if err != nil {
		t.Fatal(err)
	}
	ledger := credits.New(s, nil)
	const extra = 800
	if _, err := ledger.Grant(ctx, a.ID, extra, "top-up"); err != nil {
		t.Fatal(err)
	}
	emails := make([]string, crashJobs)
	refunds := 0
	for i := range emails {
		emails[i] = crashEmail(i)
		if crashUnknown(emails[i]) {
			refunds++
		}
	}
	q, err := jobs.NewQueue(s, ledger, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.EnqueueCharged(ctx, jobs.EnqueueChargedParams{Account: a.ID, Emails: emails, IdempotencyKey: "crash-batch"}); err != nil {
		t.Fatal(err)
	}

	child := func() *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), envCrashSchema+"="+schema)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	completed := func() int {
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM "`+schema+`".jobs WHERE state = 'completed'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	first := child()
	deadline := time.Now().Add(30 * time.Second)
	for completed() < 150 {
		if time.Now().After(deadline) {
			_ = first.Process.Kill()
			t.Fatal("the first worker process completed too few jobs in 30s")
		}
		time.Sleep(2 * time.Millisecond)
	}
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = first.Wait()
	atKill := completed()
	t.Logf("killed the first worker after %d of %d jobs completed", atKill, crashJobs)
	if atKill == crashJobs {
		t.Fatal("the first worker finished before it was killed")
	}

	second := child()
	waitErr := make(chan error, 1)
	go func() { waitErr <- second.Wait() }()
	select {
	case err := <-waitErr:
		if err != nil {
			t.Fatalf("second worker process: %v", err)
		}
	case <-time.After(60 * time.Second):
		_ = second.Process.Kill()
		t.Fatal("the second worker process did not finish in 60s")
	}

	// Every job completed, each exactly once: one pending webhook delivery
	// per job (written in the completion's transaction) and at most one
	// refund.
	var jobsDone, refundEntries, rescued int
	err = pool.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM "`+schema+`".jobs WHERE errors > 0),
		(SELECT count(*) FROM "`+schema+`".jobs WHERE state = 'completed' AND result IS NOT NULL),
		(SELECT count(*) FROM "`+schema+`".credit_entries WHERE reason = 'refund')`).
		Scan(&rescued, &jobsDone, &refundEntries)
	if err != nil {
		t.Fatal(err)
	}
	ds, err := s.Webhooks().Deliveries(ctx, webhook.ListParams{AccountID: a.ID, Limit: 2 * crashJobs})
	if err != nil {
		t.Fatal(err)
	}
	eventJobs := map[string]bool{}
	for _, d := range ds {
		if d.ID != "evt_"+d.JobID || d.State != webhook.StatePending || d.Type != webhook.TypeValidationCompleted {
			t.Errorf("delivery %s for job %q: %s, type %q; want a pending validation.completed event of its job", d.ID, d.JobID, d.State, d.Type)
		}
		eventJobs[d.JobID] = true
	}
	pending, err := s.Webhooks().Pending(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d jobs were leased by the killed process and rescued", rescued)
	if jobsDone != crashJobs || len(ds) != crashJobs || len(eventJobs) != crashJobs || pending != crashJobs {
		t.Fatalf("%d jobs completed, %d events (%d pending) for %d jobs; want %d of each",
			jobsDone, len(ds), pending, len(eventJobs), crashJobs)
	}
	if refundEntries != refunds {
		t.Fatalf("%d refunds, want %d", refundEntries, refunds)
	}
	want := int64(store.DefaultSignupCredits + extra - crashJobs + refunds)
	bal, err := ledger.Balance(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	hist, err := ledger.History(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	for _, e := range hist {
		sum += e.Delta
	}
	if bal != want || sum != want {
		t.Fatalf("balance %d, history sum %d; want %d = 300 + %d - %d + %d", bal, sum, want, extra, crashJobs, refunds)
	}
}
