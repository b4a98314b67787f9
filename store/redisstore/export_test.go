package redisstore

import (
	"context"
	"strconv"
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
