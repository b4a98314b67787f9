package jobs

import (
	"cmp"
	"context"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/validmail/validmail/jobs/jobsdriver"
)

// Deferrals of the jobs of an account at its bound. A gate spreads an
// account's refused jobs over the time its slots take to free: each is
// due back one step after the one refused before it (or now), a step
// being half the time a slot of the account is held over its bound, so
// that about twice as many come back as its slots can take, however
// large its backlog, instead of all of it being leased and deferred
// again every second or two. The wait is at most maxSlotDeferral, plus a
// step of jitter. Until a slot of the account has been released here,
// the step is slotDeferral over its bound; while the account holds
// slots here but none was released yet, a refused job waits
// slotDeferral plus up to as much jitter, and the schedule starts once
// the first is released.
const (
	slotDeferral    = time.Second
	maxSlotDeferral = 30 * time.Second
)

// fullMemory is how long a gate that the slots told an account is at
// its bound defers its jobs without asking again: a slot released on
// this instance ends it at once, one released on another when it
// passes. The bound stays exact (every slot is taken from the slots);
// only a free slot may wait this long for a job here.
const fullMemory = 500 * time.Millisecond

// maxGateAccounts bounds the accounts a gate remembers.
const maxGateAccounts = 10000

// limitCacheTTL is how long a pool trusts an account's bound it read.
const limitCacheTTL = 5 * time.Second

// accountGate applies [PoolConfig.AccountConcurrency] to a pool's jobs:
// a job of an account at its bound goes back to the queue, uncounted,
// for a while (see slotDeferral). The bound holds across instances with
// [PoolConfig.AccountSlots]; without, per instance ([jobsdriver.NewMemorySlots]).
type accountGate struct {
	limit  func(ctx context.Context, account string) int
	slots  jobsdriver.AccountSlots
	ttl    time.Duration
	logger *slog.Logger

	mu     sync.Mutex
	cached map[string]cachedLimit
	accts  map[string]*gateAccount
}

type cachedLimit struct {
	n   int
	exp time.Time
}

// gateAccount is what a gate knows of an account's slots.
type gateAccount struct {
	held  int           // slots this pool holds
	until time.Time     // at its bound, as the slots said: refuse until then
	hold  time.Duration // how long a slot is held here, a moving average
	next  time.Time     // when the last refused job is due back
}

// newAccountGate returns the pool's gate, or nil when no bound is
// configured. ttl bounds a slot's life: longer than any validation.
func newAccountGate(cfg *PoolConfig, ttl time.Duration, logger *slog.Logger) *accountGate {
	if cfg.AccountConcurrency == nil {
		return nil
	}
	slots := cfg.AccountSlots
	if slots == nil {
		slots = jobsdriver.NewMemorySlots()
	}
	return &accountGate{limit: cfg.AccountConcurrency, slots: slots, ttl: ttl, logger: logger,
		cached: make(map[string]cachedLimit), accts: make(map[string]*gateAccount)}
}

// bound returns the account's bound (0: none), read at most every
// limitCacheTTL.
func (g *accountGate) bound(ctx context.Context, account string) int {
	now := time.Now()
	g.mu.Lock()
	c, ok := g.cached[account]
	g.mu.Unlock()
	if ok && now.Before(c.exp) {
		return c.n
	}
	n := max(g.limit(ctx, account), 0)
	g.mu.Lock()
	if len(g.cached) >= maxGateAccounts {
		clear(g.cached)
	}
	g.cached[account] = cachedLimit{n: n, exp: now.Add(limitCacheTTL)}
	g.mu.Unlock()
	return n
}

// acquire takes a slot for the lease: ok false when its account is at
// its bound, with how long the job should wait in the queue. release
// frees the slot. An account this pool holds the bound of, or that the
// slots found at its bound within fullMemory, is refused without asking
// them. The slot's holder is the lease's token, so that a job leased
// again elsewhere (its first lease lost) does not share the slot its
// first lease holds. A failing slot store lets the job through
// (logged): the bound is a fairness measure, not a guard.
func (g *accountGate) acquire(ctx context.Context, l jobsdriver.Lease) (release func(), wait time.Duration, ok bool) {
	n := g.bound(ctx, l.AccountID)
	if n == 0 {
		return func() {}, 0, true
	}
	if g.knownFull(l.AccountID, n) {
		return nil, g.refused(l.AccountID, n, false), false
	}
	holder := cmp.Or(l.Token, l.ID)
	got, err := g.slots.AcquireSlot(ctx, l.AccountID, holder, n, g.ttl)
	if err != nil {
		g.logger.WarnContext(ctx, "jobs: account slots failed; job let through", "account", l.AccountID, "err", err)
		return func() {}, 0, true
	}
	if !got {
		return nil, g.refused(l.AccountID, n, true), false
	}
	start := g.acquired(l.AccountID)
	return func() {
		g.released(l.AccountID, start)
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), bookkeepingTimeout)
		defer cancel()
		if err := g.slots.ReleaseSlot(rctx, l.AccountID, holder); err != nil {
			g.logger.WarnContext(ctx, "jobs: account slot not released; it expires", "account", l.AccountID, "err", err)
		}
	}, 0, true
}

// accountLocked returns the gate's state of the account, made if need
// be. g.mu is held.
func (g *accountGate) accountLocked(account string) *gateAccount {
	a, ok := g.accts[account]
	if !ok {
		if len(g.accts) >= maxGateAccounts {
			// Forgetting loses only timing: a slot held is released
			// all the same, and an account forgotten asks the slots.
			clear(g.accts)
		}
		a = &gateAccount{}
		g.accts[account] = a
	}
	return a
}

// knownFull reports whether the account is at its bound as far as the
// gate knows: the pool holds bound slots, or the slots said so lately.
func (g *accountGate) knownFull(account string, bound int) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	a, ok := g.accts[account]
	return ok && (a.held >= bound || time.Now().Before(a.until))
}

// refused returns how long a refused job of the account waits (see
// slotDeferral); asked (the slots refused it) renews the gate's memory
// of the account at its bound.
func (g *accountGate) refused(account string, bound int, asked bool) time.Duration {
	now := time.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	a := g.accountLocked(account)
	if asked {
		a.until = now.Add(fullMemory)
	}
	if a.hold == 0 && a.held > 0 {
		return slotDeferral + rand.N(slotDeferral)
	}
	step := max(cmp.Or(a.hold/2, slotDeferral)/time.Duration(bound), time.Millisecond)
	wait := min(max(a.next.Sub(now), 0)+step, maxSlotDeferral)
	a.next = now.Add(wait)
	return wait + rand.N(step)
}

// acquired records a slot the pool took for the account, and returns
// when.
func (g *accountGate) acquired(account string) time.Time {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.accountLocked(account).held++
	return time.Now()
}

// released records that the pool freed a slot of the account taken at
// start: its next job asks the slots, and the time it was held counts
// in the account's average.
func (g *accountGate) released(account string, start time.Time) {
	d := max(time.Since(start), time.Millisecond)
	g.mu.Lock()
	defer g.mu.Unlock()
	a := g.accountLocked(account)
	a.held = max(a.held-1, 0)
	a.until = time.Time{}
	if a.hold == 0 {
		a.hold = d
	} else {
		a.hold = (4*a.hold + d) / 5
	}
	if a.held == 0 && time.Now().After(a.next) {
		// Idle and nothing due back: forget it.
		delete(g.accts, account)
	}
}
