package jobs

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"
)

// AccountSlots counts each account's jobs being validated across a
// deployment, so that a per-account bound (a plan's concurrent jobs)
// holds over every instance's pool. A slot is held by one job (holder,
// its id) until released or until its time to live passes, so that an
// instance that dies frees its slots on its own. Like every backend
// interface, it may be called concurrently from several processes
// sharing the backend: of concurrent acquisitions of an account's last
// free slot, one succeeds.
type AccountSlots interface {
	// AcquireSlot takes one of the account's limit slots for holder until
	// ttl passes and reports whether it could: false when limit
	// unexpired slots are held by others. A holder that holds a slot
	// already has it renewed.
	AcquireSlot(ctx context.Context, account, holder string, limit int, ttl time.Duration) (bool, error)
	// ReleaseSlot frees holder's slot of the account; none is no error.
	ReleaseSlot(ctx context.Context, account, holder string) error
}

// slotDeferral is how long a job of an account at its bound waits in the
// queue before it is leased again, plus up to as much jitter.
const slotDeferral = time.Second

// limitCacheTTL is how long a pool trusts an account's bound it read.
const limitCacheTTL = 5 * time.Second

// accountGate applies [PoolConfig.AccountConcurrency] to a pool's jobs:
// a job of an account at its bound goes back to the queue, uncounted,
// for slotDeferral. The bound holds across instances with
// [PoolConfig.AccountSlots]; without, per instance (memorySlots).
type accountGate struct {
	limit  func(ctx context.Context, account string) int
	slots  AccountSlots
	ttl    time.Duration
	logger *slog.Logger

	mu     sync.Mutex
	cached map[string]cachedLimit
}

type cachedLimit struct {
	n   int
	exp time.Time
}

// newAccountGate returns the pool's gate, or nil when no bound is
// configured. ttl bounds a slot's life: longer than any validation.
func newAccountGate(cfg *PoolConfig, ttl time.Duration, logger *slog.Logger) *accountGate {
	if cfg.AccountConcurrency == nil {
		return nil
	}
	slots := cfg.AccountSlots
	if slots == nil {
		slots = &memorySlots{}
	}
	return &accountGate{limit: cfg.AccountConcurrency, slots: slots, ttl: ttl, logger: logger, cached: make(map[string]cachedLimit)}
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
	if len(g.cached) >= 10000 {
		clear(g.cached)
	}
	g.cached[account] = cachedLimit{n: n, exp: now.Add(limitCacheTTL)}
	g.mu.Unlock()
	return n
}

// acquire takes a slot for the lease's job: ok false when its account
// is at its bound. release frees it. A failing slot store lets the job
// through (logged): the bound is a fairness measure, not a guard.
func (g *accountGate) acquire(ctx context.Context, l Lease) (release func(), ok bool) {
	n := g.bound(ctx, l.AccountID)
	if n == 0 {
		return func() {}, true
	}
	got, err := g.slots.AcquireSlot(ctx, l.AccountID, l.ID, n, g.ttl)
	if err != nil {
		g.logger.WarnContext(ctx, "jobs: account slots failed; job let through", "account", l.AccountID, "err", err)
		return func() {}, true
	}
	if !got {
		return nil, false
	}
	return func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), bookkeepingTimeout)
		defer cancel()
		if err := g.slots.ReleaseSlot(rctx, l.AccountID, l.ID); err != nil {
			g.logger.WarnContext(ctx, "jobs: account slot not released; it expires", "account", l.AccountID, "err", err)
		}
	}, true
}

// delay is how long a job refused a slot waits in the queue.
func (g *accountGate) delay() time.Duration {
	return slotDeferral + rand.N(slotDeferral)
}

// memorySlots is an [AccountSlots] of one process: a pool without a
// shared one bounds each account per instance.
type memorySlots struct {
	mu      sync.Mutex
	holders map[string]map[string]time.Time // account → holder → expiry
}

// NewMemorySlots returns an [AccountSlots] kept in this process: the
// bound it gives holds for the pools sharing it, not across processes.
func NewMemorySlots() AccountSlots { return &memorySlots{} }

func (m *memorySlots) AcquireSlot(ctx context.Context, account, holder string, limit int, ttl time.Duration) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.holders == nil {
		m.holders = make(map[string]map[string]time.Time)
	}
	hs := m.holders[account]
	for h, exp := range hs {
		if !now.Before(exp) {
			delete(hs, h)
		}
	}
	if _, ok := hs[holder]; !ok && len(hs) >= limit {
		return false, nil
	}
	if hs == nil {
		hs = make(map[string]time.Time)
		m.holders[account] = hs
	}
	hs[holder] = now.Add(ttl)
	return true, nil
}

func (m *memorySlots) ReleaseSlot(ctx context.Context, account, holder string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.holders[account], holder)
	if len(m.holders[account]) == 0 {
		delete(m.holders, account)
	}
	return nil
}
