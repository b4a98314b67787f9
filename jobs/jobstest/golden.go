package jobstest

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/jobs/jobsdriver"
	"github.com/validmail/validmail/jobs/jobtype"
	"github.com/validmail/validmail/webhook"
)

// goldenEvents holds the bytes of the events a batch of four jobs
// produces, one event a line: each job's validation.completed, then the
// batch's batch.completed. {job0}…{job3} and {batch} stand for the ids
// the backend gave.
//
//go:embed testdata/events.golden
var goldenEvents string

// goldenAt is the clock of the golden events.
var goldenAt = time.Date(2026, 1, 2, 3, 4, 5, 678901234, time.UTC)

// goldenStatuses are the verdicts of the golden batch's jobs, in order.
var goldenStatuses = []emailcheck.Status{
	emailcheck.StatusLikely, emailcheck.StatusUnknown, emailcheck.StatusLikely, emailcheck.StatusDisposable,
}

// goldenResult is the fixed result of the golden batch's job i.
func goldenResult(i int, email string) emailcheck.Result {
	r := emailcheck.Result{Email: email}
	r.Confidence.Status = goldenStatuses[i]
	r.Confidence.Score = 90 - 10*i
	r.Validations.Syntax = true
	r.Validations.DomainExists = i != 1
	r.Meta.Source = "api_async"
	return r
}

// testEventBytes: the events of a batch, built by the webhook package
// for fixed results at a fixed time and written by the
// driver, are exactly the golden bytes, whether the jobs complete one by
// one or, for a [jobsdriver.BatchCompleter], in one group.
func testEventBytes(t *testing.T, b *bundle) {
	if _, ok := b.Driver.(jobsdriver.BatchDriver); !ok {
		t.Skip("driver does not implement jobsdriver.BatchDriver")
	}
	ctx := context.Background()
	for _, group := range []bool{false, true} {
		bc, ok := b.Driver.(jobsdriver.BatchCompleter)
		if group && !ok {
			continue
		}
		acct := account()
		addrs := make([]string, len(goldenStatuses))
		for i := range addrs {
			addrs[i] = fmt.Sprintf("golden%d@example.org", i)
		}
		ids, err := b.q.Enqueue(ctx, acct, addrs)
		if err != nil {
			t.Fatal(err)
		}
		ls := mustLease(t, b, len(ids), time.Minute)
		if len(ls) != len(ids) {
			t.Fatalf("leased %d jobs, want %d", len(ls), len(ids))
		}
		ps := make([]jobsdriver.CompleteParams, len(ls))
		for _, l := range ls {
			i := indexOf(ids, l.ID)
			res := goldenResult(i, l.Email)
			job := l.Job
			job.State, job.Result = jobtype.StateCompleted, &res
			body, err := json.Marshal(res)
			if err != nil {
				t.Fatal(err)
			}
			ev, err := webhook.NewEvent(job.AccountID, job.ID, body, goldenAt)
			if err != nil {
				t.Fatal(err)
			}
			bev := webhook.NewBatchEvent(job.AccountID, job.ID, goldenAt)
			ps[i] = jobsdriver.CompleteParams{ID: l.ID, Token: l.Token, Result: res, Event: &ev, BatchEvent: &bev}
		}
		if group {
			for i, err := range bc.CompleteMany(ctx, ps) {
				if err != nil {
					t.Fatalf("CompleteMany item %d: %v", i, err)
				}
			}
		} else {
			for _, p := range ps {
				if err := b.Driver.Complete(ctx, p); err != nil {
					t.Fatal(err)
				}
			}
		}
		evs, err := b.Events(ctx, acct)
		if err != nil {
			t.Fatal(err)
		}
		var got strings.Builder
		for _, id := range ids {
			for _, e := range evs {
				if e.Type == webhook.TypeValidationCompleted && strings.Contains(string(e.Payload), `"job_id":"`+id+`"`) {
					got.Write(e.Payload)
					got.WriteByte('\n')
				}
			}
		}
		for _, e := range evs {
			if e.Type == webhook.TypeBatchCompleted {
				got.Write(e.Payload)
				got.WriteByte('\n')
			}
		}
		repl := []string{"{batch}", ids[0]}
		for i, id := range ids {
			repl = append(repl, fmt.Sprintf("{job%d}", i), id)
		}
		want := strings.NewReplacer(repl...).Replace(goldenEvents)
		if got.String() != want {
			t.Errorf("group %v: event bytes\n got: %s\nwant: %s", group, got.String(), want)
		}
		if n := len(evs); n != len(ids)+1 {
			t.Errorf("group %v: %d events, want %d", group, n, len(ids)+1)
		}
	}
}

func indexOf(ids []string, id string) int {
	for i, x := range ids {
		if x == id {
			return i
		}
	}
	return -1
}
