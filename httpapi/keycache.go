package httpapi

import (
	"crypto/sha256"
	"sync"
	"time"

	"github.com/validmail/validmail/store"
)

// DefaultKeyCacheTTL is how long an authenticated API key is trusted
// without asking the backend again: a key revoked on another instance
// stops working everywhere within it.
const DefaultKeyCacheTTL = time.Second

// keyCacheSize bounds the keys a handler remembers; a full cache forgets
// the expired ones, then, if need be, all of them.
const keyCacheSize = 10_000

// keyCache remembers recently authenticated keys by the SHA-256 of their
// secret (the secret itself is never kept), so that a busy key costs the
// backend one lookup per TTL instead of one per request.
type keyCache struct {
	ttl time.Duration
	now func() time.Time

	mu      sync.Mutex
	entries map[[sha256.Size]byte]cachedKey
}

type cachedKey struct {
	key   store.Key
	state keyState
	until time.Time
}

// keyState is what the API knows of a key's account besides the key: for
// now, whether its email is still unconfirmed (no route serves it then).
type keyState struct {
	unconfirmed bool
	plan        string // the account's plan, for its rate limit
}

func newKeyCache(ttl time.Duration, now func() time.Time) *keyCache {
	return &keyCache{ttl: ttl, now: now, entries: make(map[[sha256.Size]byte]cachedKey)}
}

// get returns the key authenticated by the secret hashed to sum, if it
// was authenticated less than the TTL ago.
func (c *keyCache) get(sum [sha256.Size]byte) (store.Key, keyState, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[sum]
	if !ok {
		return store.Key{}, keyState{}, false
	}
	if !c.now().Before(e.until) {
		delete(c.entries, sum)
		return store.Key{}, keyState{}, false
	}
	return e.key, e.state, true
}

// put remembers k, its account in state st, as authenticated by the
// secret hashed to sum.
func (c *keyCache) put(sum [sha256.Size]byte, k store.Key, st keyState) {
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) >= keyCacheSize {
		for s, e := range c.entries {
			if !now.Before(e.until) {
				delete(c.entries, s)
			}
		}
		if len(c.entries) >= keyCacheSize {
			clear(c.entries)
		}
	}
	c.entries[sum] = cachedKey{key: k, state: st, until: now.Add(c.ttl)}
}

// forget drops the key with id id, revoked through this handler.
func (c *keyCache) forget(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for s, e := range c.entries {
		if e.key.ID == id {
			delete(c.entries, s)
		}
	}
}
