package store_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/validmail/validmail/store"
)

// mapUsage is a Usage in a map that fails while broken is set, and counts
// its writes.
type mapUsage struct {
	mu     sync.Mutex
	counts map[string]int // account/month/status → n
	writes int
	broken bool
}

func (u *mapUsage) AddUsage(_ context.Context, acct string, at time.Time, status string, n int) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.broken {
		return errors.New("down")
	}
	u.writes++
	u.counts[acct+"/"+store.MonthKey(at)+"/"+status] += n
	return nil
}

func (u *mapUsage) MonthUsage(_ context.Context, acct string, at time.Time) (map[string]int, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	out := map[string]int{}
	prefix := acct + "/" + store.MonthKey(at) + "/"
	for k, n := range u.counts {
		if len(k) > len(prefix) && k[:len(prefix)] == prefix {
			out[k[len(prefix):]] = n
		}
	}
	return out, nil
}

func TestUsageBuffer(t *testing.T) {
	ctx := context.Background()
	next := &mapUsage{counts: map[string]int{}}
	b := store.NewUsageBuffer(next)
	may := time.Date(2026, 5, 10, 0, 0, 0, 0, time.UTC)
	june := may.AddDate(0, 1, 0)
	var wg sync.WaitGroup
	for i := range 1000 {
		wg.Go(func() {
			status := "LIKELY"
			if i%10 == 0 {
				status = "INVALID"
			}
			_ = b.AddUsage(ctx, "a", may, status, 1)
		})
	}
	wg.Wait()
	_ = b.AddUsage(ctx, "a", june, "LIKELY", 5)
	_ = b.AddUsage(ctx, "b", may, "LIKELY", 2)

	// Reads see what is not flushed yet.
	m, err := b.MonthUsage(ctx, "a", may)
	if err != nil || m["LIKELY"] != 900 || m["INVALID"] != 100 || len(m) != 2 {
		t.Fatalf("before the flush: %v, %v", m, err)
	}
	if next.writes != 0 {
		t.Fatalf("%d writes before the flush", next.writes)
	}
	if err := b.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if next.writes != 4 {
		t.Fatalf("%d writes for 4 account/month/status counts; want 4", next.writes)
	}
	m, _ = b.MonthUsage(ctx, "a", may)
	if m["LIKELY"] != 900 || m["INVALID"] != 100 {
		t.Fatalf("after the flush: %v", m)
	}
	if m, _ := b.MonthUsage(ctx, "a", june); m["LIKELY"] != 5 {
		t.Fatalf("june: %v", m)
	}

	// A failed flush keeps the counts for the next.
	_ = b.AddUsage(ctx, "a", may, "LIKELY", 7)
	next.broken = true
	if err := b.Flush(ctx); err == nil {
		t.Fatal("a failed flush reported no error")
	}
	if m, _ := b.MonthUsage(ctx, "a", may); m["LIKELY"] != 907 {
		t.Fatalf("while broken, read %v; want the kept count", m)
	}
	next.broken = false
	if err := b.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if m, _ := next.MonthUsage(ctx, "a", may); m["LIKELY"] != 907 {
		t.Fatalf("after the retry: %v; want 907", m)
	}
}

// Run flushes on its ticker and once more when its context ends.
func TestUsageBufferRun(t *testing.T) {
	next := &mapUsage{counts: map[string]int{}}
	b := store.NewUsageBuffer(next)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx, 10*time.Millisecond, nil) }()
	now := time.Now()
	_ = b.AddUsage(ctx, "a", now, "LIKELY", 1)
	deadline := time.Now().Add(5 * time.Second)
	for {
		m, _ := next.MonthUsage(ctx, "a", now)
		if m["LIKELY"] == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("not flushed by the ticker")
		}
		time.Sleep(5 * time.Millisecond)
	}
	_ = b.AddUsage(ctx, "a", now, "LIKELY", 1)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if m, _ := next.MonthUsage(ctx, "a", now); m["LIKELY"] != 2 {
		t.Fatalf("after Run returned: %v; want the last count flushed", m)
	}
}
