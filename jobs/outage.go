package jobs

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"
)

// Canary tells whether the DNS resolver the validations use answers at
// all: nil when a nameserver answers a question whose answer is known, an
// error when none does. [emailcheck.Validator.PingNameservers] is one. It
// must be safe for concurrent use and return when ctx ends.
//
// The pool asks it only when a validation could not be judged (an UNKNOWN
// verdict): a true outage fails the canary too, a domain of its own that
// never answers does not.
type Canary func(ctx context.Context) error

// Defaults of the handling of unanswered lookups ([PoolConfig.Canary]).
const (
	// DefaultUnknownAttempts is how many times in a row a job whose own
	// domain got no DNS verdict (no nameserver answered, or they answered
	// with a failure) is tried before its UNKNOWN verdict is final.
	DefaultUnknownAttempts = 3
	// DefaultOutagePause is the longest wait between two questions to
	// the canary while the pool pauses for a DNS outage; the waits start
	// at outagePollStart and double.
	DefaultOutagePause = 2 * time.Second
	// outagePollStart is the first wait of a paused pool before it asks
	// the canary again.
	outagePollStart = 100 * time.Millisecond
	// canaryTimeout bounds one question to the canary.
	canaryTimeout = 10 * time.Second
)

// DefaultUnknownBackoff waits 10 s after a job's first unanswered attempt,
// 30 s after the second and a minute after any later one, plus up to 10%
// jitter: longer than a validator caches a failed lookup (5 s by
// default), so that each attempt asks the DNS afresh. With
// [DefaultUnknownAttempts] a job at a domain that never answers is final
// about 40 s after its first attempt, plus the three lookups' own time.
func DefaultUnknownBackoff(failures int) time.Duration {
	d := time.Minute
	switch failures {
	case 0, 1:
		d = 10 * time.Second
	case 2:
		d = 30 * time.Second
	}
	return d + rand.N(d/10+1)
}

// outage decides whether the DNS as a whole is down by asking the canary,
// never from the jobs' outcomes: the pool asks [outage.answers] when a
// validation came back unjudged, and while the canary fails the pool
// leases nothing, asking it again ([outage.waitUp]) with waits that
// double up to a maximum, until it answers.
type outage struct {
	canary  Canary // nil: the DNS is never considered down
	after   func(time.Duration) <-chan time.Time
	maxPoll time.Duration
	logger  *slog.Logger

	mu      sync.Mutex
	down    bool
	up      chan struct{} // closed when the outage ends
	started uint64        // questions started so far
	flight  *probe        // the question in flight, if any
	last    *probe        // the latest answered question
	outages int64         // outages seen
}

// probe is one question to the canary.
type probe struct {
	seq  uint64
	done chan struct{} // closed once err is set
	err  error
}

func newOutage(canary Canary, maxPoll time.Duration, logger *slog.Logger) *outage {
	return &outage{canary: canary, after: time.After, maxPoll: maxPoll, logger: logger}
}

// isDown reports whether the last question to the canary went
// unanswered.
func (o *outage) isDown() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.down
}

// count returns how many outages began.
func (o *outage) count() int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.outages
}

// answers reports whether the canary answers a question asked after the
// call began, so that a validation that failed just before tells the
// truth about that moment. Concurrent callers share questions: one in
// flight that began after a caller's call serves it. When ctx ends first
// it reports the state as last known. Without a canary it reports true.
func (o *outage) answers(ctx context.Context) bool {
	if o.canary == nil {
		return true
	}
	o.mu.Lock()
	after := o.started // a question numbered above this began after the call
	for {
		if o.last != nil && o.last.seq > after {
			ok := o.last.err == nil
			o.mu.Unlock()
			return ok
		}
		f := o.flight
		if f == nil {
			f = &probe{seq: o.started + 1, done: make(chan struct{})}
			o.started++
			o.flight = f
			o.mu.Unlock()
			o.ask(ctx, f)
			return f.err == nil
		}
		o.mu.Unlock()
		select {
		case <-f.done:
		case <-ctx.Done():
			return !o.isDown()
		}
		o.mu.Lock()
	}
}

// ask puts question f to the canary and records the answer. A question
// left unanswered is asked once more before the DNS counts as down, so
// that one answer lost on a busy machine pauses nothing.
func (o *outage) ask(ctx context.Context, f *probe) {
	var err error
	for range 2 {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), canaryTimeout)
		err = o.canary(cctx)
		cancel()
		if err == nil {
			break
		}
	}

	o.mu.Lock()
	defer o.mu.Unlock()
	f.err = err
	o.flight = nil
	o.last = f
	close(f.done)
	switch {
	case err != nil && !o.down:
		o.down = true
		o.up = make(chan struct{})
		o.outages++
		o.logger.WarnContext(ctx, "jobs: no nameserver answers; pausing until one does", "err", err)
	case err == nil && o.down:
		o.down = false
		close(o.up)
		o.logger.InfoContext(ctx, "jobs: a nameserver answers again; resuming")
	}
}

// waitUp returns once the DNS is not down (at once if it is not), or when
// ctx ends. While it is down it asks the canary again after a wait that
// starts at outagePollStart and doubles up to maxPoll; an answer to
// anyone else's question ends the wait too.
func (o *outage) waitUp(ctx context.Context) {
	pause := outagePollStart
	for {
		o.mu.Lock()
		down, up := o.down, o.up
		o.mu.Unlock()
		if !down {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-up:
			return
		case <-o.after(pause):
		}
		if o.answers(ctx) {
			return
		}
		pause = min(2*pause, o.maxPoll)
	}
}
