// Package uploads shares an instance's slots for list uploads among
// accounts, and keeps a slow upload alive past the server's read timeout
// while its bytes keep arriving.
package uploads

import "sync"

// Slots bounds the uploads read at once: at most a total number on the
// instance, and at most a number per account within it, so that one
// account cannot hold every slot. The zero value is not usable; create
// it with [NewSlots].
type Slots struct {
	mu         sync.Mutex
	total, per int
	busy       int
	byAccount  map[string]int
}

// NewSlots returns slots for total uploads at once, at most perAccount
// of them one account's. Values below 1 count as 1.
func NewSlots(total, perAccount int) *Slots {
	return &Slots{total: max(total, 1), per: max(perAccount, 1), byAccount: map[string]int{}}
}

// Refusal tells why [Slots.Take] refused an upload.
type Refusal int

// Reasons of a refusal.
const (
	// Granted: no refusal.
	Granted Refusal = iota
	// InstanceBusy: every slot of the instance is taken.
	InstanceBusy
	// AccountBusy: the account holds its share of the slots.
	AccountBusy
)

// Take takes a slot for account. When it is granted, release gives it
// back (once; later calls do nothing); else release is nil and why says
// whose limit was reached.
func (s *Slots) Take(account string) (release func(), why Refusal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.byAccount[account] >= s.per:
		return nil, AccountBusy
	case s.busy >= s.total:
		return nil, InstanceBusy
	}
	s.busy++
	s.byAccount[account]++
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.busy--
			if s.byAccount[account]--; s.byAccount[account] <= 0 {
				delete(s.byAccount, account)
			}
		})
	}, Granted
}
