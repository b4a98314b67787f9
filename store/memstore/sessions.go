package memstore

import (
	"context"
	"sync"
	"time"

	"github.com/validmail/validmail/store"
)

// Sessions is an in-memory [store.SessionStore]. Expired sessions are
// dropped as they are found and, at most once a minute, in a sweep during
// a save; nothing runs in the background.
type Sessions struct {
	mu        sync.Mutex
	m         map[string]session             // id → session
	byAccount map[string]map[string]struct{} // account id → session ids
	nextSweep time.Time
}

type session struct {
	account string
	data    []byte
	expiry  time.Time
}

var _ store.SessionStore = (*Sessions)(nil)

// NewSessions returns an empty session store.
func NewSessions() *Sessions {
	return &Sessions{m: make(map[string]session), byAccount: make(map[string]map[string]struct{})}
}

// FindSession implements [store.SessionStore].
func (s *Sessions) FindSession(ctx context.Context, id string) ([]byte, bool, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.m[id]
	if !ok {
		return nil, false, nil
	}
	if !time.Now().Before(v.expiry) {
		s.deleteLocked(id)
		return nil, false, nil
	}
	return append([]byte(nil), v.data...), true, nil
}

// SaveSession implements [store.SessionStore].
func (s *Sessions) SaveSession(ctx context.Context, ss store.Session) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.saveLocked(ss)
	return nil
}

func (s *Sessions) saveLocked(ss store.Session) {
	now := time.Now()
	if now.After(s.nextSweep) {
		for id, v := range s.m {
			if !now.Before(v.expiry) {
				s.deleteLocked(id)
			}
		}
		s.nextSweep = now.Add(time.Minute)
	}
	s.deleteLocked(ss.ID)
	if !now.Before(ss.Expiry) {
		return
	}
	s.m[ss.ID] = session{account: ss.AccountID, data: append([]byte(nil), ss.Data...), expiry: ss.Expiry}
	if ss.AccountID != "" {
		ids := s.byAccount[ss.AccountID]
		if ids == nil {
			ids = make(map[string]struct{})
			s.byAccount[ss.AccountID] = ids
		}
		ids[ss.ID] = struct{}{}
	}
}

// UpdateSession implements [store.SessionStore].
func (s *Sessions) UpdateSession(ctx context.Context, ss store.Session) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if v, ok := s.m[ss.ID]; ok && time.Now().Before(v.expiry) {
		s.saveLocked(ss)
	}
	return nil
}

// DeleteSession implements [store.SessionStore].
func (s *Sessions) DeleteSession(ctx context.Context, id string) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.deleteLocked(id)
	return nil
}

// DeleteAccountSessions implements [store.SessionStore].
func (s *Sessions) DeleteAccountSessions(ctx context.Context, accountID, keepID string) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for id := range s.byAccount[accountID] {
		if id != keepID {
			s.deleteLocked(id)
		}
	}
	return nil
}

func (s *Sessions) deleteLocked(id string) {
	v, ok := s.m[id]
	if !ok {
		return
	}
	delete(s.m, id)
	if ids := s.byAccount[v.account]; ids != nil {
		delete(ids, id)
		if len(ids) == 0 {
			delete(s.byAccount, v.account)
		}
	}
}

// Len returns how many sessions the store holds, expired ones not yet
// dropped included.
func (s *Sessions) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}
