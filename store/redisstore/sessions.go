package redisstore

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/validmail/validmail/store"
)

// Sessions is the dashboard's [store.SessionStore]: one string key per
// session, session:TOKEN under the store's prefix, expiring with the
// session, so every process on the server shares them.
type Sessions struct{ s *Store }

var _ store.SessionStore = (*Sessions)(nil)

// FindCtx implements [store.SessionStore].
func (ss *Sessions) FindCtx(ctx context.Context, token string) ([]byte, bool, error) {
	b, err := ss.s.rdb.Get(ctx, ss.s.key("session:"+token)).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, ss.s.wrap(ctx, "find session", err)
	}
	return b, true, nil
}

// CommitCtx implements [store.SessionStore].
func (ss *Sessions) CommitCtx(ctx context.Context, token string, b []byte, expiry time.Time) error {
	ttl := time.Until(expiry)
	if ttl <= 0 {
		return ss.DeleteCtx(ctx, token)
	}
	if err := ss.s.rdb.Set(ctx, ss.s.key("session:"+token), b, max(ttl, time.Millisecond)).Err(); err != nil {
		return ss.s.wrap(ctx, "commit session", err)
	}
	return nil
}

// DeleteCtx implements [store.SessionStore].
func (ss *Sessions) DeleteCtx(ctx context.Context, token string) error {
	if err := ss.s.rdb.Del(ctx, ss.s.key("session:"+token)).Err(); err != nil {
		return ss.s.wrap(ctx, "delete session", err)
	}
	return nil
}

// Find implements [store.SessionStore].
func (ss *Sessions) Find(token string) ([]byte, bool, error) {
	return ss.FindCtx(context.Background(), token)
}

// Commit implements [store.SessionStore].
func (ss *Sessions) Commit(token string, b []byte, expiry time.Time) error {
	return ss.CommitCtx(context.Background(), token, b, expiry)
}

// Delete implements [store.SessionStore].
func (ss *Sessions) Delete(token string) error {
	return ss.DeleteCtx(context.Background(), token)
}
