package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/validmail/validmail/store"
	"github.com/validmail/validmail/store/backend"
)

var _ backend.HealthChecker = (*Store)(nil)

// markerName is the key [Store.Setup] writes: its value, random, tells a
// server that still holds the store's data from one that restarted
// without it (or a new server) and looks alike otherwise.
const markerName = "marker"

// Persistence is how a Redis server keeps its data across a restart, as
// its configuration says.
type Persistence struct {
	// Known is false when the server would not say: CONFIG is disabled
	// or renamed, as on many managed services.
	Known bool
	// AOF reports the append-only file on (appendonly yes).
	AOF bool
	// Save is the snapshot schedule ("3600 1 300 100"); empty means no
	// snapshots.
	Save string
}

// Durable reports whether the server keeps its data across a restart:
// by AOF or by snapshots.
func (p Persistence) Durable() bool { return p.AOF || p.Save != "" }

// String describes p in a few words for logs and readiness probes.
func (p Persistence) String() string {
	switch {
	case !p.Known:
		return "unknown (the server does not answer CONFIG GET)"
	case p.AOF && p.Save != "":
		return "AOF and snapshots (save " + p.Save + ")"
	case p.AOF:
		return "AOF"
	case p.Save != "":
		return "snapshots only (save " + p.Save + "): a restart loses the writes since the last one"
	}
	return "off: neither AOF (appendonly) nor snapshots (save) are on, so a restart loses every account, key and queued job"
}

// Persistence reads the server's persistence settings. A server that
// refuses CONFIG GET gives a Persistence that is not Known, and no error;
// an error means the server could not be reached. On a cluster it asks
// the master that holds the store's keys.
func (s *Store) Persistence(ctx context.Context) (Persistence, error) {
	var server redis.Cmdable = s.rdb
	if cc, ok := s.rdb.(*redis.ClusterClient); ok {
		m, err := cc.MasterForKey(ctx, s.key(markerName))
		if err != nil {
			return Persistence{}, s.wrap(ctx, "config get", err)
		}
		server = m
	}
	aof, err := server.ConfigGet(ctx, "appendonly").Result()
	if err != nil {
		if _, ok := errors.AsType[redis.Error](err); ok {
			return Persistence{}, nil
		}
		return Persistence{}, s.wrap(ctx, "config get", err)
	}
	save, err := server.ConfigGet(ctx, "save").Result()
	if err != nil {
		if _, ok := errors.AsType[redis.Error](err); ok {
			return Persistence{}, nil
		}
		return Persistence{}, s.wrap(ctx, "config get", err)
	}
	if _, ok := aof["appendonly"]; !ok {
		// A proxy that answers CONFIG GET with nothing.
		return Persistence{}, nil
	}
	return Persistence{
		Known: true,
		AOF:   strings.EqualFold(aof["appendonly"], "yes"),
		Save:  strings.TrimSpace(save["save"]),
	}, nil
}

// Setup prepares the store for serving, once; later calls return nil at
// once. It reads the server's persistence settings and logs a warning
// when a restart would lose the data (or when the server will not say),
// reads the store's layout stamp, refusing one newer than
// [LayoutVersion] with [ErrLayoutTooNew], and reads the marker key under
// the prefix: from then on, a marker gone or changed means the server
// lost the store's data, and [Store.CheckHealth], [Store.Authenticate],
// [Store.GetAccountByEmail] and [Store.CreateAccount] report
// [store.ErrDataLost].
//
// A missing marker is written, with a log line, when the prefix holds a
// previous release's data (accounts, but neither marker nor layout
// stamp): the store is adopted as it lies. Otherwise it is written only
// when [Config.Init] is set (or by [Store.Init]): an empty prefix looks
// the same whether the deployment is new or the server lost its data,
// and only the operator knows which; and a stamped store without its
// marker had it deleted. Setup then returns an error wrapping
// [store.ErrDataLost] and succeeds on a later call once the data is
// restored. A store not yet at [LayoutVersion] is stamped, unless
// [Config.SkipMigrate] is set: then Setup fails with [ErrLayoutOutdated]
// and [Store.Migrate] is to be run first.
//
// Any call that needs it runs Setup; a host calls it at start, so that
// the warning is logged, and a lost store refused, before the first
// request.
func (s *Store) Setup(ctx context.Context) error {
	return s.setup(ctx, s.init, s.skipMigrate)
}

// Init declares the store new: it writes the marker key when there is
// none, then runs [Store.Setup], stamping the layout whatever
// [Config.SkipMigrate] says. Call it once, at the first start of a
// deployment; a store whose marker is there is left as it is (and a
// warning logged, since a host that always calls Init cannot notice a
// loss of the server's data).
func (s *Store) Init(ctx context.Context) error {
	return s.setup(ctx, true, false)
}

func (s *Store) setup(ctx context.Context, init, skipMigrate bool) error {
	if s.markerValue() != "" {
		return nil
	}
	s.setupMu.Lock()
	defer s.setupMu.Unlock()
	if s.markerValue() != "" {
		return nil
	}
	p, err := s.Persistence(ctx)
	if err != nil {
		return err
	}
	layout, err := s.checkLayout(ctx)
	if err != nil {
		return err
	}
	value, err := s.readMarker(ctx, layout, init, skipMigrate)
	if err != nil {
		return err
	}
	if layout < LayoutVersion && skipMigrate {
		return fmt.Errorf("%w: the store under prefix %q is at layout version %d, this release needs %d: run validmaild migrate (redisstore Store.Migrate) first", ErrLayoutOutdated, s.prefix, layout, LayoutVersion)
	}
	if err := s.stamp(ctx, layout); err != nil {
		return err
	}
	switch {
	case !p.Known:
		s.logger.WarnContext(ctx, "redisstore: persistence unknown: the Redis server does not answer CONFIG GET; make sure it keeps its data with AOF or snapshots, or a restart loses every account, key and queued job")
	case !p.Durable():
		s.logger.WarnContext(ctx, "redisstore: PERSISTENCE OFF: the Redis server keeps neither an append-only file nor snapshots, so a restart loses every account, key and queued job; turn on appendonly", "appendonly", "no", "save", "")
	default:
		s.logger.InfoContext(ctx, "redisstore: persistence", "persistence", p.String())
	}
	s.lostLogged.Store(false)
	s.persistence.Store(&p)
	s.marker.Store(&value)
	return nil
}

// readMarker returns the store's marker, writing it when the store is
// declared new (init) or holds a previous release's data (no marker, no
// layout stamp, accounts); an error wrapping [store.ErrDataLost] when it
// is missing otherwise.
func (s *Store) readMarker(ctx context.Context, layout int, init, skipMigrate bool) (string, error) {
	key := s.key(markerName)
	value, err := s.rdb.Get(ctx, key).Result()
	switch {
	case err == nil:
		if init {
			s.logger.WarnContext(ctx, "redisstore: the store was initialised already; start without initialising it (drop -store-init), or a loss of the server's data goes unnoticed", "key", key)
		}
		return value, nil
	case !errors.Is(err, redis.Nil):
		return "", s.wrap(ctx, "setup", err)
	}
	adopt := false
	if layout == 0 {
		if adopt, err = s.hasPreviousData(ctx); err != nil {
			return "", err
		}
	}
	switch {
	case adopt && skipMigrate:
		return "", fmt.Errorf("%w: the store under prefix %q holds a previous release's data without a marker: run validmaild migrate (redisstore Store.Migrate) first", ErrLayoutOutdated, s.prefix)
	case !adopt && !init:
		if s.lostLogged.CompareAndSwap(false, true) {
			s.logger.ErrorContext(ctx, "redisstore: NO MARKER KEY: the store under this prefix was never initialised, or the Redis server lost its data; a new deployment starts once with the store initialised (validmaild -store-init), otherwise restore the server's data", "key", key)
		}
		return "", fmt.Errorf("redisstore: %w: the marker key %s is missing: for a new deployment, initialise the store once (validmaild -store-init, storeurl Options.Init, redisstore Config.Init); otherwise the Redis server lost its data: restore it", store.ErrDataLost, key)
	}
	value = token() + " " + time.Now().UTC().Format(time.RFC3339)
	created, err := s.rdb.SetNX(ctx, key, value, 0).Result()
	if err != nil {
		return "", s.wrap(ctx, "setup", err)
	}
	switch {
	case !created:
		// Another process wrote it at the same moment.
		if value, err = s.rdb.Get(ctx, key).Result(); err != nil {
			return "", s.wrap(ctx, "setup", err)
		}
	case adopt:
		s.logger.InfoContext(ctx, "redisstore: a previous release's store adopted: its accounts are there but it had no marker; marker written", "key", key)
	default:
		s.logger.InfoContext(ctx, "redisstore: store initialised: marker written", "key", key)
	}
	return value, nil
}

// markerValue is the marker Setup wrote or read; "" before Setup.
func (s *Store) markerValue() string {
	if v := s.marker.Load(); v != nil {
		return *v
	}
	return ""
}

// dataLost logs the loss, once, and returns the error that reports it.
func (s *Store) dataLost(ctx context.Context) error {
	key := s.key(markerName)
	if s.lostLogged.CompareAndSwap(false, true) {
		s.logger.ErrorContext(ctx, "redisstore: THE STORE LOST ITS DATA: the marker key written at start is gone or replaced, so the Redis server restarted without its data (or the key was deleted); requests are refused until the data is restored (restarting does not help: a new process refuses the store too)", "key", key)
	}
	return fmt.Errorf("redisstore: %w: the marker key %s is gone or replaced", store.ErrDataLost, key)
}

// checkMarker returns an error wrapping [store.ErrDataLost] when the
// marker Setup saw is gone or replaced.
func (s *Store) checkMarker(ctx context.Context) error {
	if err := s.Setup(ctx); err != nil {
		return err
	}
	v, err := s.rdb.Get(ctx, s.key(markerName)).Result()
	if errors.Is(err, redis.Nil) || (err == nil && v != s.markerValue()) {
		return s.dataLost(ctx)
	}
	if err != nil {
		return s.wrap(ctx, "check marker", err)
	}
	return nil
}

// CheckHealth implements [backend.HealthChecker]: an error wrapping
// [store.ErrDataLost] when the server lost the store's data (the marker
// is gone), and a note when the server's persistence is off or unknown.
// It reads the persistence settings again, so a fix made at run time
// (CONFIG SET appendonly yes) shows at once.
func (s *Store) CheckHealth(ctx context.Context) ([]string, error) {
	if err := s.checkMarker(ctx); err != nil {
		return nil, err
	}
	p := *s.persistence.Load()
	if p.Known {
		if now, err := s.Persistence(ctx); err == nil {
			p = now
		}
	}
	if p.Known && p.Durable() {
		return nil, nil
	}
	return []string{"redis persistence: " + p.String()}, nil
}
