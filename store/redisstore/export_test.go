package redisstore

import (
	"context"
	"strconv"
	"strings"
)

// BackfillTotalsStep runs one backfill of the account's totals counting
// at most chunk entries, and returns how many remain.
func BackfillTotalsStep(ctx context.Context, s *Store, account string, chunk int) (int64, error) {
	keys := []string{s.acctKey(account, "hist:"+account), s.acctKey(account, "ctot:"+account)}
	return s.run(ctx, scriptTotalsBackfill, keys, chunk).Int64()
}

// KeyOf returns the full name of the key called name that a call about
// account reads: "job:ID" and "bt:ID" in the id's shard, the global names
// in the store's own slot, the others in the account's shard.
func KeyOf(s *Store, account, name string) string {
	for _, p := range []string{"job:", "bt:"} {
		if id, ok := strings.CutPrefix(name, p); ok {
			return s.idBase(id) + name
		}
	}
	switch {
	case name == "emails", name == "keyhash", name == markerName, name == "notify",
		strings.HasPrefix(name, "acct:"), strings.HasPrefix(name, "key:"), strings.HasPrefix(name, "keys:"):
		return s.key(name)
	}
	return s.acctKey(account, name)
}

// FirstJobID returns the id the first job of account's shard gets.
func FirstJobID(account string) string {
	return strconv.FormatInt(idOffset(accountShard(account))+1, 10)
}

// KeySlot is keySlot, for the test that checks it against the server.
var KeySlot = keySlot

// BucketKey returns the name of the key of the store's limiter's bucket
// named key.
func BucketKey(s *Store, key string) string { return s.rateLimiter().bucketKey(key) }

// SlotOf returns the cluster slot of a key name.
func SlotOf(name string) int {
	if i := strings.IndexByte(name, '{'); i >= 0 {
		if j := strings.IndexByte(name[i+1:], '}'); j > 0 {
			return keySlot(name[i+1 : i+1+j])
		}
	}
	return keySlot(name)
}
