package dashboard

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/validmail/validmail/store"
)

// enrollCacheTTL is how long an instance trusts a team's requirement of
// a second factor, and whether a login has one, that it read: a
// requirement turned on reaches the sessions already signed in within
// it, on every instance.
const enrollCacheTTL = 10 * time.Second

// maxEnrollCache bounds the entries of each of an instance's caches.
const maxEnrollCache = 10000

// flagCache remembers yes-or-no answers of the store for a short while.
type flagCache struct {
	mu sync.Mutex
	m  map[string]flagEntry
}

type flagEntry struct {
	v   bool
	exp time.Time
}

func (c *flagCache) get(key string, now time.Time) (v, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[key]
	if !ok || !now.Before(e.exp) {
		return false, false
	}
	return e.v, true
}

func (c *flagCache) put(key string, v bool, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxEnrollCache {
		c.m = make(map[string]flagEntry)
	}
	c.m[key] = flagEntry{v: v, exp: now.Add(enrollCacheTTL)}
}

func (c *flagCache) forget(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, key)
}

// enrollCaches are an instance's caches of second-factor facts read on
// every signed-in request.
type enrollCaches struct {
	required flagCache // account id → its team requires a second factor
	has      flagCache // login id → it has one
}

// mustEnroll reports whether the signed-in login must add a second
// factor before anything else: its session was told so at sign-in, or
// its team requires one now and it has none (a requirement turned on
// after it signed in).
func (d *Dashboard) mustEnroll(ctx context.Context, a store.Account, m store.Member) (bool, error) {
	if d.sessions.GetBool(ctx, sessEnroll) {
		return true, nil
	}
	now := d.cfg.Now()
	required, ok := d.enroll.required.get(a.ID, now)
	if !ok {
		var err error
		if required, err = d.cfg.TwoFactor.TeamTOTP(ctx, a.ID); err != nil {
			return false, err
		}
		d.enroll.required.put(a.ID, required, now)
	}
	if !required {
		return false, nil
	}
	login := loginID(a, m)
	has, ok := d.enroll.has.get(login, now)
	if !ok {
		_, err := d.cfg.TwoFactor.TOTP(ctx, login)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return false, err
		}
		has = err == nil
		d.enroll.has.put(login, has, now)
	}
	return !has, nil
}
