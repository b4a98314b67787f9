package jobs_test

import (
	"context"
	"fmt"

	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/jobs"
	"github.com/validmail/validmail/store/memstore"
)

type exampleValidator struct{}

func (exampleValidator) Validate(_ context.Context, email string, _ ...emailcheck.CallOption) (emailcheck.Result, error) {
	r := emailcheck.Result{Email: email}
	r.Confidence.Status = emailcheck.StatusLikely
	return r, nil
}

func Example() {
	ctx := context.Background()
	s := memstore.New()
	ledger := credits.New(s, nil)
	ledger.Grant(ctx, "acct-1", 10, "")
	q, _ := jobs.NewQueue(s.Backend().Jobs, ledger, nil)

	ids, err := q.EnqueueCharged(ctx, jobs.EnqueueChargedParams{
		AccountID: "acct-1",
		Emails:    []string{"ada@example.org", "alan@example.org"},
	})
	fmt.Println(ids, err)

	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	pool, _ := jobs.NewPool(q, exampleValidator{}, &jobs.PoolConfig{
		Workers: 2,
		OnComplete: func(_ context.Context, j jobs.Job) {
			if j.ID == ids[len(ids)-1] {
				close(done)
			}
		},
	})
	go pool.Run(runCtx)
	<-done
	stop()

	j, _ := q.Get(ctx, "acct-1", ids[1])
	fmt.Println(j.State, j.Result.Confidence.Status, j.Result.Meta.Source)
	bal, _ := ledger.Balance(ctx, "acct-1")
	fmt.Println("balance", bal)
	// Output:
	// [1 2] <nil>
	// completed LIKELY api_async
	// balance 8
}
