package memstore

import (
	"context"
	"sync"
	"time"

	"github.com/validmail/validmail/store"
)

// Sessions is an in-memory [store.SessionStore]. Expired sessions are
// dropped as they are found and, at most once a minute, in a sweep during
// a commit; nothing runs in the background.
type Sessions struct {
	mu        sync.Mutex
	m         map[string]session
	nextSweep time.Time
}

type session struct {
	data   []byte
	expiry time.Time
}

var _ store.SessionStore = (*Sessions)(nil)

// NewSessions returns an empty session store.
func NewSessions() *Sessions { return &Sessions{m: make(map[string]session)} }

// FindCtx implements [store.SessionStore].
func (s *Sessions) FindCtx(ctx context.Context, token string) ([]byte, bool, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.m[token]
	if !ok {
		return nil, false, nil
	}
	if !time.Now().Before(v.expiry) {
		delete(s.m, token)
		return nil, false, nil
	}
	return append([]byte(nil), v.data...), true, nil
}

// CommitCtx implements [store.SessionStore].
func (s *Sessions) CommitCtx(ctx context.Context, token string, b []byte, expiry time.Time) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	if now.After(s.nextSweep) {
		for t, v := range s.m {
			if !now.Before(v.expiry) {
				delete(s.m, t)
			}
		}
		s.nextSweep = now.Add(time.Minute)
	}
	s.m[token] = session{data: append([]byte(nil), b...), expiry: expiry}
	return nil
}

// DeleteCtx implements [store.SessionStore].
func (s *Sessions) DeleteCtx(ctx context.Context, token string) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, token)
	return nil
}

// Find implements [store.SessionStore].
func (s *Sessions) Find(token string) ([]byte, bool, error) {
	return s.FindCtx(context.Background(), token)
}

// Commit implements [store.SessionStore].
func (s *Sessions) Commit(token string, b []byte, expiry time.Time) error {
	return s.CommitCtx(context.Background(), token, b, expiry)
}

// Delete implements [store.SessionStore].
func (s *Sessions) Delete(token string) error {
	return s.DeleteCtx(context.Background(), token)
}
