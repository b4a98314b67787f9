package storetest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/validmail/validmail/store/backend"
)

// testAccountSlots: an account's slots are taken up to the limit, a
// holder's again renews it, a release or an expiry frees one, accounts
// are apart, and of concurrent acquisitions exactly the limit succeed.
func testAccountSlots(t *testing.T, b *backend.Backend) {
	if b.AccountSlots == nil {
		t.Skip("backend keeps no account slots")
	}
	ctx := context.Background()
	sl := b.AccountSlots
	acct, other := uuid.NewString(), uuid.NewString()
	long := time.Hour
	for _, tc := range []struct {
		account, holder string
		want            bool
	}{
		{acct, "j1", true},
		{acct, "j2", true},
		{acct, "j3", false}, // the limit is 2
		{acct, "j1", true},  // renewed
		{other, "j3", true}, // another account's slots are its own
	} {
		if ok, err := sl.AcquireSlot(ctx, tc.account, tc.holder, 2, long); err != nil || ok != tc.want {
			t.Errorf("AcquireSlot(%s) = %v, %v; want %v", tc.holder, ok, err, tc.want)
		}
	}
	if err := sl.ReleaseSlot(ctx, acct, "j2"); err != nil {
		t.Fatal(err)
	}
	if err := sl.ReleaseSlot(ctx, acct, "never held"); err != nil {
		t.Errorf("ReleaseSlot of a holder without a slot: %v", err)
	}
	if ok, err := sl.AcquireSlot(ctx, acct, "j3", 2, long); err != nil || !ok {
		t.Errorf("AcquireSlot after a release = %v, %v", ok, err)
	}

	// An expired slot frees itself.
	exp := uuid.NewString()
	if ok, err := sl.AcquireSlot(ctx, exp, "short", 1, 200*time.Millisecond); err != nil || !ok {
		t.Fatalf("AcquireSlot = %v, %v", ok, err)
	}
	if ok, err := sl.AcquireSlot(ctx, exp, "next", 1, long); err != nil || ok {
		t.Errorf("AcquireSlot while the slot is live = %v, %v", ok, err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		ok, err := sl.AcquireSlot(ctx, exp, "next", 1, long)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("an expired slot is never freed")
		}
		time.Sleep(50 * time.Millisecond)
	}

	// Concurrent acquisitions: exactly the limit.
	busy := uuid.NewString()
	var got atomic.Int32
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			ok, err := sl.AcquireSlot(ctx, busy, fmt.Sprint("h", i), 3, long)
			if err != nil {
				t.Error(err)
			}
			if ok {
				got.Add(1)
			}
		})
	}
	wg.Wait()
	if got.Load() != 3 {
		t.Errorf("of 16 concurrent acquisitions with a limit of 3, %d succeeded", got.Load())
	}
}
