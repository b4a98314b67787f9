package jobsdriver

import (
	"context"
	"sync"
	"time"
)

// AccountSlots counts each account's jobs being validated across a
// deployment, so that a per-account bound (a plan's concurrent jobs)
// holds over every instance's pool. A slot is held by one holder (a
// job's lease) until released or until its time to live passes, so
// that an instance that dies frees its slots on its own. Like every backend
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
