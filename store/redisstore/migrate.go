package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/validmail/validmail/store"
)

// LayoutVersion is the version of the key layout this code writes and
// reads, stamped on the store (key "layout") by [Store.Setup]:
//
//   - 1: every key under "{prefix}", no marker and no stamp (the releases
//     before the stamp). This code reads it where it lies.
//   - 2: accounts spread over 16 shards, the marker, the stamp.
//
// A store stamped with a higher version was written by a newer release:
// Setup refuses it with [ErrLayoutTooNew] and changes nothing.
const LayoutVersion = 2

// layoutName is the key that holds the store's layout version.
const layoutName = "layout"

// Errors of a store's layout version.
var (
	// ErrLayoutTooNew reports a store stamped by a newer release than the
	// running one (a rollback): the code refuses to touch it. It wraps
	// [store.ErrTooNew].
	ErrLayoutTooNew = fmt.Errorf("redisstore: store layout is newer than this code: %w", store.ErrTooNew)
	// ErrLayoutOutdated reports, with [Config.SkipMigrate], a store that
	// needs its layout stamped (or a previous release's data adopted)
	// first, by [Store.Migrate]. It wraps [store.ErrNeedsMigration].
	ErrLayoutOutdated = fmt.Errorf("redisstore: store layout needs migrating: %w", store.ErrNeedsMigration)
)

// stampLayout raises the stamp to ARGV[1], never lowers it, and returns
// the stamp it found (0 for none).
var stampLayout = redis.NewScript(`
local v = tonumber(redis.call('GET', KEYS[1]) or '0')
if v == nil then return redis.error_reply('layout stamp is not a number') end
if v < tonumber(ARGV[1]) then redis.call('SET', KEYS[1], ARGV[1]) end
return v
`)

// Migrate brings the store to the layout this code knows: it adopts a
// previous release's data (see [Store.Setup]) and stamps the store with
// [LayoutVersion], logging each step, whatever [Config.SkipMigrate]
// says; otherwise it is Setup. With [Config.Init] it declares an empty
// prefix new. Running it again changes nothing. A store stamped newer
// than [LayoutVersion] fails with [ErrLayoutTooNew] and is left
// untouched.
func (s *Store) Migrate(ctx context.Context) error {
	return s.setup(ctx, s.init, false)
}

// LayoutVersion returns the layout version the store is stamped with, 0
// when it has none (a new prefix, or one written by a release before the
// stamp).
func (s *Store) LayoutVersion(ctx context.Context) (int, error) {
	return s.readLayout(ctx)
}

func (s *Store) readLayout(ctx context.Context) (int, error) {
	v, err := s.rdb.Get(ctx, s.key(layoutName)).Result()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, s.wrap(ctx, "layout version", err)
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%w: the layout stamp %s is %q, not a version", ErrBadData, s.key(layoutName), v)
	}
	return n, nil
}

// checkLayout returns the store's layout stamp, or an error wrapping
// [ErrLayoutTooNew] when a newer release stamped it.
func (s *Store) checkLayout(ctx context.Context) (int, error) {
	v, err := s.readLayout(ctx)
	if err != nil {
		return 0, err
	}
	if v > LayoutVersion {
		s.logger.ErrorContext(ctx, "redisstore: the store's layout is newer than this release: a newer release wrote it, and this one would misread it; run that release again, or restore the backup taken before the upgrade", "key", s.key(layoutName), "store_layout", v, "known_layout", LayoutVersion)
		return v, fmt.Errorf("%w: the store under prefix %q is at layout version %d, this release knows %d: run the release that wrote it, or restore the backup taken before upgrading to it", ErrLayoutTooNew, s.prefix, v, LayoutVersion)
	}
	return v, nil
}

// hasPreviousData reports whether the prefix holds accounts: a store a
// release before the marker wrote, when it has neither marker nor stamp.
func (s *Store) hasPreviousData(ctx context.Context) (bool, error) {
	n, err := s.rdb.Exists(ctx, s.key("emails"), s.key("keyhash")).Result()
	if err != nil {
		return false, s.wrap(ctx, "setup", err)
	}
	return n > 0, nil
}

// stamp raises the store's layout stamp from found to [LayoutVersion].
func (s *Store) stamp(ctx context.Context, found int) error {
	if found >= LayoutVersion {
		return nil
	}
	key := s.key(layoutName)
	prev, err := stampLayout.Run(ctx, s.rdb, []string{key}, LayoutVersion).Int()
	if err != nil {
		return s.wrap(ctx, "stamp layout", err)
	}
	if prev > LayoutVersion {
		return fmt.Errorf("%w: the store under prefix %q was stamped %d by a newer release meanwhile, this release knows %d", ErrLayoutTooNew, s.prefix, prev, LayoutVersion)
	}
	if prev < LayoutVersion {
		s.logger.InfoContext(ctx, "redisstore: layout stamped", "key", key, "from", prev, "to", LayoutVersion)
	}
	return nil
}
