package credits_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/store/memstore"
)

// stuckStore is a memstore whose writes wait, as on a balance row locked
// by a long transaction: a change alone until loneGo is closed (or its
// context ends), a group until groupGo is closed (or its context ends).
type stuckStore struct {
	*memstore.Store
	loneGo, groupGo chan struct{}
	groups, lone    atomic.Int64
}

func (s *stuckStore) Apply(ctx context.Context, c credits.Change) (credits.Entry, error) {
	s.lone.Add(1)
	select {
	case <-s.loneGo:
	case <-ctx.Done():
		return credits.Entry{}, ctx.Err()
	}
	return s.Store.Apply(ctx, c)
}

func (s *stuckStore) ApplyGroup(ctx context.Context, cs []credits.Change) ([]credits.Entry, []error, error) {
	s.groups.Add(1)
	select {
	case <-s.groupGo:
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
	return s.Store.ApplyGroup(ctx, cs)
}

// A charge whose caller gives up (its context's deadline passes) while
// its group is being written returns within a bound, rather than wait
// for as long as the store takes: the group's write is bounded by its
// callers' deadlines.
func TestGroupedChargeHonoursDeadline(t *testing.T) {
	t.Parallel()
	s := &stuckStore{Store: memstore.New(), loneGo: make(chan struct{}), groupGo: make(chan struct{})}
	t.Cleanup(func() { close(s.groupGo) })
	l := credits.New(s, nil)
	ctx := context.Background()
	if _, err := s.Store.Apply(ctx, credits.Change{AccountID: "a", Delta: 100, Reason: credits.ReasonGrant}); err != nil {
		t.Fatal(err)
	}
	// The first charge goes alone and waits at the store; two more
	// arrive meanwhile and wait to go together.
	first := make(chan error, 1)
	go func() {
		_, err := l.Charge(ctx, "a", 1, "")
		first <- err
	}()
	for s.lone.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	var wg sync.WaitGroup
	var returned atomic.Int64
	for range 2 {
		wg.Go(func() {
			dctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
			defer cancel()
			l.Charge(dctx, "a", 1, "")
			returned.Add(1)
		})
	}
	time.Sleep(200 * time.Millisecond) // the two queue behind the first
	close(s.loneGo)
	select {
	case err := <-first:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the first charge, alone, did not return")
	}
	deadline := time.Now().Add(10 * time.Second)
	for returned.Load() < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if s.groups.Load() == 0 {
		t.Skip("the two charges did not go as a group")
	}
	if n := returned.Load(); n < 2 {
		t.Fatalf("%d of 2 grouped charges returned 9 s past their deadline, their group's write still waiting", n)
	}
	wg.Wait()
}
