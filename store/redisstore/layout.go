package redisstore

import (
	"hash/fnv"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/google/uuid"
)

// The key layout: which hash tag, and so which cluster slot, holds each
// key.
//
// A store's keys are spread over [shardCount] shards. Shard 0's tag is the
// store's own, "{prefix}", which holds what is global besides shard 0's
// data: accounts, the email and key-hash indexes, API keys, sessions, the
// marker. (Rate-limit buckets and quotas go to the shard their key's group
// names as if it were an account: an account's own in its shard, others
// spread; see [Store.rateLimiter].) Shard k > 0 has the tag
// "{prefix:sk.j}", j the first number that puts the tag's cluster slot in
// the k-th sixteenth of the slots: the shards are spread evenly over the
// slots whatever the prefix, so a cluster whose masters own equal ranges
// of slots gets equal numbers of shards. (A prefix may not end like such a
// tag, ":s" and digits: its keys would be another prefix's shard.)
// Everything an account's changes touch together lives in its shard:
// balance, ledger, totals, usage, jobs, batches, idempotency records,
// webhook endpoint and deliveries, and the shard's own queues (ready,
// delayed, leases, done, wh:due, wh:finished) and sequences. So every
// script stays in one slot, and on a cluster the shards, hence the
// accounts, spread over the masters.
//
// The shard is read off the ids, never looked up:
//   - accounts: new account ids are UUIDs of version 8 whose last byte is
//     the shard; version 4 UUIDs (the ids of the layout where every key
//     shared "{prefix}") are in shard 0, so that layout's data is read as
//     it lies; any other account name is hashed (FNV-1a) to a shard.
//   - jobs and batches (a batch's id is its first job's): decimal ids
//     whose bits from [shardShift] up are the shard; the ids of the old
//     layout, small numbers, are in shard 0.
//   - webhook deliveries: by their account; a lease's token starts with
//     the shard.

// shardCount is the number of shards of every store. It is part of the
// stored layout: changing it would move accounts.
const shardCount = 16

// shardShift is where a job id's shard starts: ids are shard<<shardShift
// plus the shard's sequence, exact in a Lua number (below 2^53).
const shardShift = 40

// shardBase returns the start of the names of shard k's keys.
func (s *Store) shardBase(k int) string { return s.bases[k] }

// shardBases returns the key name starts of the shards of prefix.
func shardBases(prefix string) [shardCount]string {
	var out [shardCount]string
	out[0] = "{" + prefix + "}"
	const span = slotCount / shardCount
	for k := 1; k < shardCount; k++ {
		for j := 0; ; j++ {
			tag := prefix + ":s" + strconv.Itoa(k) + "." + strconv.Itoa(j)
			if slot := keySlot(tag); slot >= k*span && slot < (k+1)*span {
				out[k] = "{" + tag + "}"
				break
			}
		}
	}
	return out
}

// slotCount is the number of a Redis Cluster's hash slots.
const slotCount = 16384

// keySlot returns the cluster slot of a hash tag's content: CRC-16/XMODEM
// modulo the slot count, as Redis computes it.
func keySlot(tag string) int {
	var crc uint16
	for i := 0; i < len(tag); i++ {
		crc ^= uint16(tag[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc) % slotCount
}

// accountShard returns the shard of account's keys.
func accountShard(account string) int {
	if len(account) == 36 {
		if u, err := uuid.Parse(account); err == nil {
			if u.Version() == 8 {
				return int(u[15]) % shardCount
			}
			return 0
		}
	}
	h := fnv.New32a()
	h.Write([]byte(account))
	return int(h.Sum32() % shardCount)
}

// newAccountID returns a fresh account id in a shard chosen at random.
func newAccountID() string {
	u := uuid.New()
	u[6] = u[6]&0x0f | 0x80 // version 8
	u[15] = byte(rand.IntN(shardCount))
	return u.String()
}

// idShard returns the shard of a job or batch id, or false for an id that
// names none.
func idShard(id string) (int, bool) {
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil || n <= 0 {
		return 0, false
	}
	k := n >> shardShift
	if k >= shardCount {
		return 0, false
	}
	return int(k), true
}

// idOffset returns the first id of shard k, less one.
func idOffset(k int) int64 { return int64(k) << shardShift }

// acctBase returns the key name start of account's shard.
func (s *Store) acctBase(account string) string { return s.shardBase(accountShard(account)) }

// acctKey returns the key called name in account's shard.
func (s *Store) acctKey(account, name string) string { return s.acctBase(account) + name }

// shardPrefix reports whether prefix ends like a shard's tag: ":s" and
// digits and dots.
func shardPrefix(prefix string) bool {
	i := strings.LastIndex(prefix, ":s")
	if i < 0 || i+2 == len(prefix) {
		return false
	}
	for _, r := range prefix[i+2:] {
		if (r < '0' || r > '9') && r != '.' {
			return false
		}
	}
	return true
}

// idBase returns the key name start of the shard of a job or batch id
// (shard 0 for an id that names none: it finds nothing there).
func (s *Store) idBase(id string) string {
	k, _ := idShard(id)
	return s.shardBase(k)
}

// KeyName returns the full name of the key called name (as the package
// documentation lists them: "hist:ACCOUNT", "bal:ACCOUNT", "seq:entry",
// "job:ID", "emails", ...) that the store reads for account: "job:ID" and
// "bt:ID" in the id's shard, the store's global names in its own slot,
// the others in the account's shard. It is for tools that read or write
// the store's keys directly, such as a migration or a load test; the
// layout may change between releases.
func (s *Store) KeyName(account, name string) string {
	for _, p := range []string{"job:", "bt:"} {
		if id, ok := strings.CutPrefix(name, p); ok {
			return s.idBase(id) + name
		}
	}
	switch {
	case name == "emails", name == "keyhash", name == markerName, name == layoutName, name == "notify", name == "notices",
		name == "members", strings.HasPrefix(name, "team:"), strings.HasPrefix(name, "inv:"), strings.HasPrefix(name, "notice:"),
		strings.HasPrefix(name, "invs:"), strings.HasPrefix(name, "totp:"), strings.HasPrefix(name, "totp-rc:"), name == "totp-team",
		strings.HasPrefix(name, "acct:"), strings.HasPrefix(name, "key:"), strings.HasPrefix(name, "keys:"):
		return s.key(name)
	}
	return s.acctKey(account, name)
}
