package jobs

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// fakeClock hands out timers that fire only when the test says so.
type fakeClock struct {
	mu     sync.Mutex
	timers []fakeTimer
	asked  chan time.Duration // each wait asked for, in order
}

type fakeTimer struct {
	d  time.Duration
	ch chan time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{asked: make(chan time.Duration, 100)} }

func (c *fakeClock) after(d time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	c.mu.Lock()
	c.timers = append(c.timers, fakeTimer{d, ch})
	c.mu.Unlock()
	c.asked <- d
	return ch
}

// fire ends every wait asked for so far.
func (c *fakeClock) fire() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range c.timers {
		t.ch <- time.Time{}
	}
	c.timers = nil
}

// scriptedCanary answers from a switch the test flips, counting questions;
// while held, questions wait for release.
type scriptedCanary struct {
	mu       sync.Mutex
	down     bool
	failNext int // questions left unanswered before down decides
	asked    int
	hold     chan struct{} // nil: answer at once
	entered  chan struct{} // receives when a question starts
}

func (c *scriptedCanary) ask(ctx context.Context) error {
	c.mu.Lock()
	c.asked++
	hold := c.hold
	c.mu.Unlock()
	if c.entered != nil {
		c.entered <- struct{}{}
	}
	if hold != nil {
		<-hold
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.failNext > 0 {
		c.failNext--
		return errors.New("answer lost")
	}
	if c.down {
		return errors.New("no answer")
	}
	return nil
}

func (c *scriptedCanary) set(down bool) {
	c.mu.Lock()
	c.down = down
	c.mu.Unlock()
}

func (c *scriptedCanary) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.asked
}

func newTestOutage(c *scriptedCanary, clock *fakeClock) *outage {
	o := newOutage(c.ask, time.Second, slog.New(slog.DiscardHandler))
	o.after = clock.after
	return o
}

func TestOutageAnswersFromCanary(t *testing.T) {
	t.Parallel()
	c := &scriptedCanary{}
	o := newTestOutage(c, newFakeClock())
	ctx := context.Background()
	if !o.answers(ctx) || o.isDown() || o.count() != 0 {
		t.Fatal("canary answering: want answers, not down")
	}
	c.set(true)
	if o.answers(ctx) || !o.isDown() || o.count() != 1 {
		t.Fatal("canary silent: want no answer, down, one outage")
	}
	if o.answers(ctx) || o.count() != 1 {
		t.Fatal("still silent: the same outage")
	}
	c.set(false)
	if !o.answers(ctx) || o.isDown() {
		t.Fatal("canary back: want answers, not down")
	}
	// One answer lost is asked again, and pauses nothing.
	c.mu.Lock()
	c.failNext = 1
	c.mu.Unlock()
	if !o.answers(ctx) || o.isDown() || o.count() != 1 {
		t.Fatal("one lost answer: want answers, not down")
	}
	// An answer goes to one call; silence is confirmed by a second.
	if c.count() != 1+2+2+1+2 {
		t.Fatalf("%d questions, want 8", c.count())
	}
}

// Without a canary the DNS is never down, whatever the jobs see.
func TestOutageWithoutCanary(t *testing.T) {
	t.Parallel()
	o := newOutage(nil, time.Second, slog.New(slog.DiscardHandler))
	if !o.answers(context.Background()) || o.isDown() {
		t.Fatal("no canary: want answers")
	}
}

// Callers share a question only when it began after they called: one in
// flight from before may predate the failure they saw.
func TestOutageSharesLaterQuestions(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := &scriptedCanary{hold: make(chan struct{})}
		o := newTestOutage(c, newFakeClock())
		ctx := context.Background()

		first := make(chan bool, 1)
		go func() { first <- o.answers(ctx) }()
		synctest.Wait() // question 1 in flight, held

		// Calls made now cannot use question 1; they share question 2.
		const late = 5
		results := make(chan bool, late)
		for range late {
			go func() { results <- o.answers(ctx) }()
		}
		synctest.Wait() // every late caller waits for question 1
		// Question 1 ends silent, asked twice; question 2 starts and
		// answers.
		c.set(true)
		c.hold <- struct{}{}
		c.hold <- struct{}{}
		if <-first {
			t.Fatal("question 1 was silent")
		}
		synctest.Wait() // question 2 in flight, held
		c.set(false)
		c.hold <- struct{}{}
		for range late {
			if !<-results {
				t.Fatal("a late caller got question 1's silence, not question 2's answer")
			}
		}
		if n := c.count(); n != 3 {
			t.Fatalf("%d calls, want 3 (question 1 twice): the late callers share question 2", n)
		}
		if o.isDown() || o.count() != 1 {
			t.Fatalf("down %v after %d outages; want up after 1", o.isDown(), o.count())
		}
	})
}

// While down, the canary is asked after waits that start at
// outagePollStart and double up to the maximum, and the wait ends at its
// first answer.
func TestOutageWaitUpBacksOff(t *testing.T) {
	t.Parallel()
	c := &scriptedCanary{}
	clock := newFakeClock()
	o := newTestOutage(c, clock)
	ctx := context.Background()

	o.waitUp(ctx) // not down: returns at once
	c.set(true)
	o.answers(ctx)
	done := make(chan struct{})
	go func() { o.waitUp(ctx); close(done) }()
	want := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond, time.Second, time.Second}
	for i, w := range want {
		if d := <-clock.asked; d != w {
			t.Fatalf("wait %d: %v, want %v", i, d, w)
		}
		select {
		case <-done:
			t.Fatal("waitUp returned while the canary is silent")
		default:
		}
		if i == len(want)-1 {
			c.set(false)
		}
		clock.fire()
	}
	<-done
	// Each silent question is asked twice; the last one is answered.
	if o.isDown() || c.count() != 2*len(want)+1 {
		t.Fatalf("down %v after %d calls; want up after %d", o.isDown(), c.count(), 2*len(want)+1)
	}
}

// An answer to another caller's question ends a paused pool's wait at
// once, without waiting for its timer.
func TestOutageWaitUpEndsOnAnyAnswer(t *testing.T) {
	t.Parallel()
	c := &scriptedCanary{}
	clock := newFakeClock()
	o := newTestOutage(c, clock)
	ctx := context.Background()
	c.set(true)
	o.answers(ctx)
	done := make(chan struct{})
	go func() { o.waitUp(ctx); close(done) }()
	<-clock.asked
	c.set(false)
	if !o.answers(ctx) {
		t.Fatal("canary back: want answers")
	}
	<-done // the timer never fired
}

func TestDefaultUnknownBackoff(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		failures int
		base     time.Duration
	}{{1, 10 * time.Second}, {2, 30 * time.Second}, {3, time.Minute}, {9, time.Minute}} {
		for range 20 {
			d := DefaultUnknownBackoff(tc.failures)
			if d < tc.base || d > tc.base+tc.base/10 {
				t.Fatalf("DefaultUnknownBackoff(%d) = %v, want %v plus up to 10%%", tc.failures, d, tc.base)
			}
		}
	}
	// Longer than the validator's default failure cache (5 s).
	if DefaultUnknownBackoff(1) <= 5*time.Second {
		t.Fatal("the first wait does not outlast a cached failure")
	}
}
