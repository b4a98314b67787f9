package credits

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
)

// GroupStore is a [Store] that applies several changes of one account in
// one atomic step and one durable commit. A [Ledger] over a GroupStore
// groups the changes of an account that arrive while another of its
// changes is being written, so that a busy account's charges share
// commits instead of queueing one by one on its balance.
type GroupStore interface {
	Store
	// ApplyGroup applies cs, every one of the same account and with
	// distinct idempotency keys, in order, all in one atomic step: each
	// is judged as [Store.Apply] would judge it alone after the ones
	// before it (a repeated key answers the earlier entry or
	// [ErrIdempotencyConflict]; a charge the balance cannot cover is an
	// [*InsufficientError] and the others go through). It returns one
	// entry and one error per change, in order; when err is not nil,
	// none of cs was applied.
	ApplyGroup(ctx context.Context, cs []Change) (entries []Entry, errs []error, err error)
}

// maxGroup is the most changes one group takes.
const maxGroup = 256

// grouper runs the changes of each account one group at a time: a change
// that arrives while its account has none being written goes at once,
// alone; those that arrive meanwhile wait and go together, as the next
// group, when it is done. A lone change thus waits for nothing, and the
// busier an account, the larger its groups.
type grouper struct {
	store GroupStore

	mu      sync.Mutex
	waiting map[string][]*pendingChange // per account; present while a group of the account is being written
}

// pendingChange is a change waiting for its group's outcome.
type pendingChange struct {
	ctx   context.Context
	c     Change
	done  chan struct{}
	entry Entry
	err   error
}

func newGrouper(store GroupStore) *grouper {
	return &grouper{store: store, waiting: make(map[string][]*pendingChange)}
}

// apply applies c in a group of its account and returns its outcome.
func (g *grouper) apply(ctx context.Context, c Change) (Entry, error) {
	p := &pendingChange{ctx: ctx, c: c, done: make(chan struct{})}
	g.mu.Lock()
	if q, busy := g.waiting[c.AccountID]; busy {
		g.waiting[c.AccountID] = append(q, p)
		g.mu.Unlock()
		select {
		case <-p.done:
			return p.entry, p.err
		case <-ctx.Done():
		}
		// Withdrawn unless its group has been taken already: then its
		// outcome is awaited, as the change may be written.
		g.mu.Lock()
		q := g.waiting[c.AccountID]
		for i, w := range q {
			if w == p {
				g.waiting[c.AccountID] = append(q[:i:i], q[i+1:]...)
				g.mu.Unlock()
				return Entry{}, ctx.Err()
			}
		}
		g.mu.Unlock()
		<-p.done
		return p.entry, p.err
	}
	g.waiting[c.AccountID] = nil
	g.mu.Unlock()
	g.run([]*pendingChange{p})
	if next := g.next(c.AccountID); next != nil {
		go g.drain(c.AccountID, next)
	}
	return p.entry, p.err
}

// next takes the account's next group from its waiting changes, or, when
// none waits, marks the account idle and returns nil. A change whose key
// is already in the group waits for the group after.
func (g *grouper) next(account string) []*pendingChange {
	g.mu.Lock()
	defer g.mu.Unlock()
	q := g.waiting[account]
	if len(q) == 0 {
		delete(g.waiting, account)
		return nil
	}
	var group, rest []*pendingChange
	keys := make(map[string]bool)
	for _, p := range q {
		k := p.c.IdempotencyKey
		if len(group) == maxGroup || (k != "" && keys[k]) {
			rest = append(rest, p)
			continue
		}
		if k != "" {
			keys[k] = true
		}
		group = append(group, p)
	}
	g.waiting[account] = rest
	return group
}

// drain writes the account's groups one after the other until none waits.
func (g *grouper) drain(account string, group []*pendingChange) {
	for ; group != nil; group = g.next(account) {
		g.run(group)
	}
}

// groupContext returns the context a group is written under: it carries
// the first change's values and ends once every change's own context has
// ended, so that no caller gives up the others' changes, and a store that
// hangs holds no caller past the latest of the group's deadlines.
func groupContext(group []*pendingChange) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(group[0].ctx))
	var left atomic.Int64
	left.Store(int64(len(group)))
	stops := make([]func() bool, len(group))
	for i, p := range group {
		stops[i] = context.AfterFunc(p.ctx, func() {
			if left.Add(-1) == 0 {
				cancel()
			}
		})
	}
	return ctx, func() {
		for _, stop := range stops {
			stop()
		}
		cancel()
	}
}

// run writes one group and hands each change its outcome; a group the
// store could not write gives every change its error.
func (g *grouper) run(group []*pendingChange) {
	defer func() {
		for _, p := range group {
			close(p.done)
		}
	}()
	if len(group) == 1 {
		p := group[0]
		p.entry, p.err = g.store.Apply(p.ctx, p.c)
		return
	}
	ctx, cancel := groupContext(group)
	defer cancel()
	cs := make([]Change, len(group))
	for i, p := range group {
		cs[i] = p.c
	}
	entries, errs, err := g.store.ApplyGroup(ctx, cs)
	if err == nil && (len(entries) != len(group) || len(errs) != len(group)) {
		err = fmt.Errorf("credits: a group of %d changes answered with %d entries and %d errors", len(group), len(entries), len(errs))
	}
	for i, p := range group {
		if err != nil {
			p.err = err
			continue
		}
		p.entry, p.err = entries[i], errs[i]
	}
}

// CheckGroup returns an error matching [ErrInvalidAmount] or
// [ErrIdempotencyConflict] unless cs is a group [GroupStore.ApplyGroup]
// takes: changes of one account, none of zero, each key once.
func CheckGroup(cs []Change) error {
	seen := make(map[string]bool, len(cs))
	for i, c := range cs {
		if c.AccountID == "" || c.AccountID != cs[0].AccountID || c.Delta == 0 {
			return fmt.Errorf("%w: a group's change %d: account %q, delta %d", ErrInvalidAmount, i, c.AccountID, c.Delta)
		}
		if c.IdempotencyKey != "" {
			if seen[c.IdempotencyKey] {
				return fmt.Errorf("%w: key %q twice in a group", ErrIdempotencyConflict, c.IdempotencyKey)
			}
			seen[c.IdempotencyKey] = true
		}
	}
	return nil
}
