package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/validmail/validmail/credits"
)

// A charge refused for want of credits names the balance it was judged
// against: one short of the amount, never one that covers it, also when
// a grant lands between the refusal and the answer.
func TestInsufficientNamesTheBalanceJudged(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t)
	var refused, wrong int
	for i := range 300 {
		acct := fmt.Sprintf("acct-%d", i)
		if _, err := s.Apply(ctx, creditsGrant(acct, 1)); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Apply(ctx, credits.Change{AccountID: acct, Delta: -1, Reason: credits.ReasonCharge}); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var err error
		wg.Go(func() {
			_, err = s.Apply(ctx, credits.Change{AccountID: acct, Delta: -1, Reason: credits.ReasonCharge})
		})
		wg.Go(func() {
			if _, err := s.Apply(ctx, creditsGrant(acct, 5)); err != nil {
				t.Error(err)
			}
		})
		wg.Wait()
		var ie *credits.InsufficientError
		if errors.As(err, &ie) {
			refused++
			if ie.Balance >= ie.Required {
				wrong++
			}
		} else if err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d of 300 charges refused, %d of them naming a balance that covers them", refused, wrong)
	if wrong > 0 {
		t.Fatalf("%d refusals name a balance that covers the charge", wrong)
	}
}
