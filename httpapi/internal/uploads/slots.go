// Package uploads shares an instance's slots for list uploads among
// accounts and client networks, lets a fast upload take the slot of the
// slowest one when every slot is taken, and keeps an upload alive past
// the server's read timeout while its bytes keep arriving at a pace.
package uploads

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// Errors an upload read through a [Reader] may end with; match them with
// errors.Is.
var (
	// ErrStalled: the client sent less than its pace's minimum within a
	// window.
	ErrStalled = errors.New("uploads: the upload stalled")
	// ErrTooLong: the upload lasted longer than its pace's MaxDuration.
	ErrTooLong = errors.New("uploads: the upload took too long")
	// ErrEvicted: the upload's slot went to a faster upload.
	ErrEvicted = errors.New("uploads: the upload lost its slot to a faster one")
)

// Defaults of [Config].
const (
	// DefaultTotal is how many uploads an instance reads at once.
	DefaultTotal = 16
	// DefaultPerAccount is how many of them one account may hold.
	DefaultPerAccount = 2
	// DefaultPerNetwork is how many of them one client network (an IPv4
	// /24, an IPv6 /64) may hold, every account's together.
	DefaultPerNetwork = 4
	// DefaultHealthyRate is the average rate, in bytes a second, at or
	// above which an upload never loses its slot: 1 MiB/s, five times
	// [DefaultPace]'s minimum.
	DefaultHealthyRate = 1 << 20
)

// Config bounds [Slots]. The zero value means the defaults.
type Config struct {
	// Total bounds the uploads held at once; default [DefaultTotal].
	Total int
	// PerAccount bounds one account's; default [DefaultPerAccount].
	PerAccount int
	// PerNetwork bounds one client network's; default
	// [DefaultPerNetwork]; negative means no bound.
	PerNetwork int
	// HealthyRate is the average rate (bytes a second since the upload
	// took its slot) below which an upload may lose its slot to a new
	// one when every slot is taken; default [DefaultHealthyRate].
	HealthyRate int64
	// Grace is how long an upload keeps its slot before its rate is
	// judged; default [DefaultPace]'s Window.
	Grace time.Duration
	// Now is the clock; default time.Now.
	Now func() time.Time
}

// Slots bounds the uploads read at once: at most Total on the instance,
// PerAccount of them one account's and PerNetwork one client network's.
// When every slot is taken, a new upload takes the slot of the slowest
// upload whose average rate is below HealthyRate (and which has had its
// Grace), which ends with [ErrEvicted]: holding a slot by trickling costs
// its holder the slot, never everyone else theirs. Create it with
// [NewSlots]; it is safe for concurrent use.
type Slots struct {
	cfg       Config
	mu        sync.Mutex
	held      map[*Slot]struct{}
	byAccount map[string]int
	byNetwork map[string]int
}

// NewSlots returns slots bounded by cfg (nil: the defaults).
func NewSlots(cfg *Config) *Slots {
	var c Config
	if cfg != nil {
		c = *cfg
	}
	if c.Total <= 0 {
		c.Total = DefaultTotal
	}
	if c.PerAccount <= 0 {
		c.PerAccount = DefaultPerAccount
	}
	if c.PerNetwork == 0 {
		c.PerNetwork = DefaultPerNetwork
	}
	if c.HealthyRate <= 0 {
		c.HealthyRate = DefaultHealthyRate
	}
	if c.Grace <= 0 {
		c.Grace = DefaultPace.Window
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return &Slots{cfg: c, held: map[*Slot]struct{}{}, byAccount: map[string]int{}, byNetwork: map[string]int{}}
}

// Refusal tells why [Slots.Take] refused an upload.
type Refusal int

// Reasons of a refusal.
const (
	// Granted: no refusal.
	Granted Refusal = iota
	// InstanceBusy: every slot of the instance is taken by uploads that
	// are fast enough, or too young to judge.
	InstanceBusy
	// AccountBusy: the account holds its share of the slots.
	AccountBusy
	// NetworkBusy: the client's network holds its share of the slots.
	NetworkBusy
)

// Slot is one upload's hold on a slot. Its methods are safe for
// concurrent use.
type Slot struct {
	s                *Slots
	account, network string
	start            time.Time
	bytes            atomic.Int64
	// Under s.mu:
	gone    bool // released or evicted
	evicted bool
	pinned  bool // its body is in: never evicted
	onEvict func()
}

// Take takes a slot for an upload of account from network (a
// ratelimit.ClientKey; empty counts under no network). When every slot is
// taken it evicts the slowest upload below HealthyRate, if any. A nil
// slot comes with the refusal's reason.
func (s *Slots) Take(account, network string) (*Slot, Refusal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.byAccount[account] >= s.cfg.PerAccount:
		return nil, AccountBusy
	case network != "" && s.cfg.PerNetwork > 0 && s.byNetwork[network] >= s.cfg.PerNetwork:
		return nil, NetworkBusy
	}
	if len(s.held) >= s.cfg.Total {
		victim := s.slowestLocked()
		if victim == nil {
			return nil, InstanceBusy
		}
		s.dropLocked(victim)
		victim.evicted = true
		if victim.onEvict != nil {
			victim.onEvict()
		}
	}
	sl := &Slot{s: s, account: account, network: network, start: s.cfg.Now()}
	s.held[sl] = struct{}{}
	s.byAccount[account]++
	if network != "" {
		s.byNetwork[network]++
	}
	return sl, Granted
}

// slowestLocked returns the held upload of the lowest average rate below
// HealthyRate among those past their Grace, or nil.
func (s *Slots) slowestLocked() *Slot {
	now := s.cfg.Now()
	var victim *Slot
	var lowest float64
	for sl := range s.held {
		age := now.Sub(sl.start)
		if age < s.cfg.Grace || sl.pinned {
			continue
		}
		rate := float64(sl.bytes.Load()) / age.Seconds()
		if rate >= float64(s.cfg.HealthyRate) {
			continue
		}
		if victim == nil || rate < lowest || rate == lowest && sl.start.Before(victim.start) {
			victim, lowest = sl, rate
		}
	}
	return victim
}

func (s *Slots) dropLocked(sl *Slot) {
	sl.gone = true
	delete(s.held, sl)
	if s.byAccount[sl.account]--; s.byAccount[sl.account] <= 0 {
		delete(s.byAccount, sl.account)
	}
	if sl.network != "" {
		if s.byNetwork[sl.network]--; s.byNetwork[sl.network] <= 0 {
			delete(s.byNetwork, sl.network)
		}
	}
}

// Held reports how many slots are taken.
func (s *Slots) Held() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.held)
}

// Add counts n more bytes received by the slot's upload.
func (sl *Slot) Add(n int64) { sl.bytes.Add(n) }

// Evicted reports whether the slot went to a faster upload.
func (sl *Slot) Evicted() bool {
	sl.s.mu.Lock()
	defer sl.s.mu.Unlock()
	return sl.evicted
}

// OnEvict sets fn to run when the slot is evicted (at once if it was):
// it runs under the slots' lock, before Take returns the slot to the new
// upload, so it must be quick and must not call the slots.
func (sl *Slot) OnEvict(fn func()) {
	sl.s.mu.Lock()
	defer sl.s.mu.Unlock()
	sl.onEvict = fn
	if sl.evicted {
		fn()
	}
}

// Pin keeps the slot from eviction, such as when its body is in, or when
// it reads what was uploaded already.
func (sl *Slot) Pin() {
	sl.s.mu.Lock()
	defer sl.s.mu.Unlock()
	sl.pinned = true
}

// Release gives the slot back; later calls, and a call after an
// eviction, do nothing. After it the slot's OnEvict function never runs.
func (sl *Slot) Release() {
	sl.s.mu.Lock()
	defer sl.s.mu.Unlock()
	sl.onEvict = nil
	if !sl.gone {
		sl.s.dropLocked(sl)
	}
}
