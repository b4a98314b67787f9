package dashboard_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/validmail/validmail/httpapi"
	"github.com/validmail/validmail/store/backend"
	"github.com/validmail/validmail/store/storeurl"
)

// Two instances' gates over one shared store admit no more than an
// account's PerAccount workbooks at once, however many requests race;
// the account's jobs holding their own slots do not take its workbooks'.
func TestWorkbookGateSharedStore(t *testing.T) {
	check := func(t *testing.T, open func() *backend.Backend) {
		b1, b2 := open(), open()
		gates := []*httpapi.WorkbookGate{
			httpapi.NewWorkbookGate(httpapi.WorkbookLimits{Slots: b1.AccountSlots, PerAccount: 2, PerInstance: 20}),
			httpapi.NewWorkbookGate(httpapi.WorkbookLimits{Slots: b2.AccountSlots, PerAccount: 2, PerInstance: 20}),
		}
		acct := uuid.NewString()
		ctx := context.Background()
		// The account's jobs hold their whole bound of one.
		if ok, err := b1.AccountSlots.AcquireSlot(ctx, acct, "job-lease", 1, time.Minute); err != nil || !ok {
			t.Fatalf("a job's slot: %v %v", ok, err)
		}
		for round := 0; round < 5; round++ {
			var in, most, admitted atomic.Int32
			var wg sync.WaitGroup
			for i := range 20 {
				wg.Go(func() {
					leave, ok := gates[i%2].Enter(ctx, acct)
					if !ok {
						return
					}
					admitted.Add(1)
					n := in.Add(1)
					for {
						m := most.Load()
						if n <= m || most.CompareAndSwap(m, n) {
							break
						}
					}
					time.Sleep(30 * time.Millisecond)
					in.Add(-1)
					leave()
				})
			}
			wg.Wait()
			if most.Load() > 2 || admitted.Load() == 0 {
				t.Fatalf("round %d: %d admitted, at most %d at once; want 1..2 at once", round, admitted.Load(), most.Load())
			}
		}
		// Every place was given back: two are free on either gate.
		l1, ok1 := gates[0].Enter(ctx, acct)
		l2, ok2 := gates[1].Enter(ctx, acct)
		if !ok1 || !ok2 {
			t.Fatalf("after the races: %v %v", ok1, ok2)
		}
		l1()
		l2()
		// The job's slot is untouched.
		if ok, err := b2.AccountSlots.AcquireSlot(ctx, acct, "another-job", 1, time.Minute); err != nil || ok {
			t.Fatalf("the account's jobs' bound after the workbooks: %v %v", ok, err)
		}
	}
	eachBackend(t, func(t *testing.T, open func() *backend.Backend, shared bool) { check(t, open) })
	t.Run("redis-cluster", func(t *testing.T) {
		raw := os.Getenv("VALIDMAIL_TEST_REDIS_CLUSTER")
		if raw == "" {
			t.Skip("VALIDMAIL_TEST_REDIS_CLUSTER is not set")
		}
		sep := "?"
		if strings.Contains(raw, "?") {
			sep = "&"
		}
		u := raw + sep + "prefix=" + fmt.Sprintf("wb_%s", uuid.NewString()[:8])
		check(t, func() *backend.Backend {
			b, err := storeurl.Open(context.Background(), u, &storeurl.Options{Init: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { b.Close() })
			return b
		})
	})
}
