package credits_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/credits/creditstest"
	"github.com/validmail/validmail/store/memstore"
)

func TestInsufficientError(t *testing.T) {
	t.Parallel()
	var err error = fmt.Errorf("charging: %w", &credits.InsufficientError{Balance: 4, Required: 5})
	var ie *credits.InsufficientError
	if !errors.Is(err, credits.ErrInsufficient) || !errors.As(err, &ie) || ie.Balance != 4 || ie.Required != 5 {
		t.Fatalf("%v does not unwrap to InsufficientError{4 5}", err)
	}
	if errors.Is(err, credits.ErrIdempotencyConflict) {
		t.Fatal("InsufficientError matches ErrIdempotencyConflict")
	}
	if got := ie.Error(); got != "credits: insufficient credits: balance 4, required 5" {
		t.Fatalf("Error() = %q", got)
	}
}

func Example() {
	ctx := context.Background()
	ledger := credits.New(memstore.New(), nil)
	ledger.Grant(ctx, "acct-1", 4, "")

	_, err := ledger.Charge(ctx, "acct-1", 5, "req-1")
	var ie *credits.InsufficientError
	if errors.As(err, &ie) {
		fmt.Println("refused: balance", ie.Balance, "required", ie.Required)
	}
	e, _ := ledger.Charge(ctx, "acct-1", 3, "req-2")
	again, _ := ledger.Charge(ctx, "acct-1", 3, "req-2")
	fmt.Println(e.Delta, again.Replayed, again.ID == e.ID)
	bal, _ := ledger.Balance(ctx, "acct-1")
	fmt.Println("balance", bal)
	// Output:
	// refused: balance 4 required 5
	// -3 true true
	// balance 1
}

// plainStore hides a Store's optional interfaces, so that the Ledger
// pages and totals its whole history.
type plainStore struct{ credits.Store }

// A Store with neither PageStore nor TotalsStore meets the same suite
// through the Ledger's fallbacks.
func TestFallbacks(t *testing.T) {
	creditstest.Run(t, func(testing.TB) credits.Store {
		return plainStore{memstore.New()}
	})
}
