package redisstore

import (
	"context"
	"strconv"
	"strings"
	"time"
)

// BackfillTotalsStep runs one backfill of the account's totals counting
// at most chunk entries, and returns how many remain.
func BackfillTotalsStep(ctx context.Context, s *Store, account string, chunk int) (int64, error) {
	keys := []string{s.acctKey(account, "hist:"+account), s.acctKey(account, "ctot:"+account)}
	return s.run(ctx, scriptTotalsBackfill, keys, chunk).Int64()
}

// KeyOf is [Store.KeyName].
func KeyOf(s *Store, account, name string) string { return s.KeyName(account, name) }

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

// StepClockBack makes the store's record of its last look at which
// shards hold work lie d ahead of it, as a step of the host's wall clock
// d back (a correction of the time) leaves it.
func StepClockBack(s *Store, d time.Duration) {
	s.probedAt.Add(d.Microseconds())
}

// DownAt is downAt.
var DownAt = downAt
