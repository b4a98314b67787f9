package redisstore

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/jobs/jobsdriver"
	"github.com/validmail/validmail/jobs/jobtype"
	"github.com/validmail/validmail/store"
)

var (
	_ store.Accounts            = (*Store)(nil)
	_ store.PlanSetter          = (*Store)(nil)
	_ credits.Store             = (*Store)(nil)
	_ credits.PageStore         = (*Store)(nil)
	_ credits.TotalsStore       = (*Store)(nil)
	_ jobsdriver.Driver         = (*jobsDriver)(nil)
	_ jobsdriver.ChargingDriver = (*jobsDriver)(nil)
	_ jobsdriver.Notifier       = (*jobsDriver)(nil)
)

// Errors reported by a [Store] besides the domain packages' sentinels.
var (
	// ErrBadData reports data under the store's prefix that the store did
	// not write: a key of the wrong type, or a value it cannot parse.
	// Nothing was changed.
	ErrBadData = errors.New("redisstore: unexpected data")
)

// DefaultPrefix is the key prefix when [Config.Prefix] is empty.
const DefaultPrefix = "validmail"

// Config configures a [Store]. The zero value gives the defaults.
type Config struct {
	// Prefix starts every key's hash tag ("{validmail}acct:ID",
	// "{validmail:s3.17}job:ID"), so that several stores can share a
	// server; see the package documentation for how a store's keys spread
	// over cluster slots. It must not contain braces nor end like a
	// shard's tag (":s" and digits). Default [DefaultPrefix].
	Prefix string
	// Retention is how long a completed job stays readable when its
	// completion does not say (jobsdriver.CompleteParams.Retention, which a
	// jobs.Pool always sets to its queue's retention, so that a deployment
	// has one setting): its key expires that long after completion.
	// Default [jobtype.DefaultRetention].
	Retention time.Duration
	// Logger receives the store's records: the server's persistence at
	// [Store.Setup], and a loss of its data. Default: discard.
	Logger *slog.Logger
	// Init lets [Store.Setup] write the marker key when there is none,
	// declaring the store new: set it for the first start of a new
	// deployment (or a new prefix) only. Without it, the default, a
	// missing marker means the server lost the store's data, and Setup
	// and every call that needs it report [store.ErrDataLost], so that a
	// process started after the loss refuses to serve an empty store as
	// if it were the customers' one. [Store.Init] does the same on
	// demand.
	//
	// A prefix that holds a previous release's data (accounts, but no
	// marker and no layout stamp) needs no Init: Setup adopts it.
	Init bool
	// SkipMigrate makes [Store.Setup] check that the store is at
	// [LayoutVersion] instead of stamping it (or adopting a previous
	// release's data), failing with [ErrLayoutOutdated] otherwise, for
	// deployments that run [Store.Migrate] as a step of their own.
	SkipMigrate bool
}

// Store is a Redis backend. It is safe for concurrent use, also from many
// processes sharing one server and prefix. Create it with [New].
type Store struct {
	rdb         redis.UniversalClient
	prefix      string
	base        string             // "{prefix}": shard 0 and what is global
	bases       [shardCount]string // of each shard
	retention   time.Duration
	logger      *slog.Logger
	init        bool // Config.Init
	skipMigrate bool // Config.SkipMigrate

	setupMu     sync.Mutex                  // orders Setup
	marker      atomic.Pointer[string]      // the marker's value, from Setup
	persistence atomic.Pointer[Persistence] // as Setup read it
	lostLogged  atomic.Bool

	busy     atomic.Uint32            // bit k: shard k held jobs at the last look
	weights  [shardCount]atomic.Int32 // shard k's accounts with jobs ready, at the last look
	next     atomic.Uint32            // where the next Lease starts
	probedAt atomic.Int64             // µs: when busy was last looked up
	down     [shardCount]atomic.Int64 // µs: until when Lease skips shard k, which failed
}

// New returns a Store over client, which stays the caller's to configure
// and close. cfg may be nil. New does not contact the server.
func New(client redis.UniversalClient, cfg *Config) (*Store, error) {
	if client == nil {
		return nil, errors.New("redisstore: nil client")
	}
	var c Config
	if cfg != nil {
		c = *cfg
	}
	c.Prefix = cmp.Or(c.Prefix, DefaultPrefix)
	if strings.ContainsAny(c.Prefix, "{}") {
		return nil, fmt.Errorf("redisstore: prefix %q contains a brace", c.Prefix)
	}
	if shardPrefix(c.Prefix) {
		return nil, fmt.Errorf("redisstore: prefix %q ends like a shard's tag (\":s\" and digits)", c.Prefix)
	}
	if c.Retention < 0 {
		return nil, fmt.Errorf("redisstore: negative retention %v", c.Retention)
	}
	if c.Retention > 0 && c.Retention < time.Millisecond {
		return nil, fmt.Errorf("redisstore: retention %v is shorter than a millisecond", c.Retention)
	}
	return &Store{
		rdb:         client,
		prefix:      c.Prefix,
		bases:       shardBases(c.Prefix),
		base:        "{" + c.Prefix + "}",
		retention:   cmp.Or(c.Retention, jobtype.DefaultRetention),
		logger:      cmp.Or(c.Logger, slog.New(slog.DiscardHandler)),
		init:        c.Init,
		skipMigrate: c.SkipMigrate,
	}, nil
}

// key returns the full name of the key called name.
func (s *Store) key(name string) string { return s.base + name }

// channel is the Pub/Sub channel that announces new jobs.
func (s *Store) channel() string { return s.base + "notify" }

// wrap turns an error from go-redis into the store's errors: the context's
// error when ctx ended, [ErrBadData] for a wrong key type or a script
// failure, [store.ErrUnavailable] for anything that is not a server reply and
// for the replies of a cluster whose slots are moving (MOVED, ASK,
// TRYAGAIN, CLUSTERDOWN, ...), which the cluster client follows and
// reports only when it ran out of redirects.
func (s *Store) wrap(ctx context.Context, op string, err error) error {
	if err == nil {
		return nil
	}
	if ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
		return fmt.Errorf("redisstore: %s: %w (%w)", op, ctx.Err(), err)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("redisstore: %s: %w", op, err)
	}
	var re redis.Error
	if errors.As(err, &re) && !clusterTransient(re) {
		return fmt.Errorf("redisstore: %s: %w: %w", op, ErrBadData, err)
	}
	return fmt.Errorf("redisstore: %s: server unavailable: %w: %w", op, store.ErrUnavailable, err)
}

// code returns the code a script failed with ("NOTFOUND" for an error reply
// "VM_NOTFOUND ..." or, as the server reports errors raised inside a
// script, "ERR VM_NOTFOUND ...") and the words after it, or "" when err is
// not such a reply.
func code(err error) (string, []string) {
	var re redis.Error
	if !errors.As(err, &re) {
		return "", nil
	}
	f := strings.Fields(re.Error())
	if len(f) > 0 && f[0] == "ERR" {
		f = f[1:]
	}
	if len(f) == 0 {
		return "", nil
	}
	c, ok := strings.CutPrefix(f[0], "VM_")
	if !ok {
		return "", nil
	}
	return c, f[1:]
}

// run runs script with keys and args.
func (s *Store) run(ctx context.Context, sc *redis.Script, keys []string, args ...any) *redis.Cmd {
	return sc.Run(ctx, s.rdb, keys, args...)
}

// runShard runs a script on shard k's keys. On a cluster it goes to the
// shard's master on that master's own connections, by the client's map
// of slots, so that a master that cannot be reached fails the call at
// once instead of after the cluster client's retries; a reply saying the
// slot moved sends it through the cluster client, which follows the
// redirect.
func (s *Store) runShard(ctx context.Context, k int, sc *redis.Script, keys []string, args ...any) *redis.Cmd {
	cc, ok := s.rdb.(*redis.ClusterClient)
	if !ok {
		return sc.Run(ctx, s.rdb, keys, args...)
	}
	m, err := cc.MasterForKey(ctx, s.shardBase(k)+"ready")
	if err != nil {
		return sc.Run(ctx, s.rdb, keys, args...)
	}
	cmd := sc.Run(ctx, m, keys, args...)
	if redirected(cmd.Err()) {
		cc.ReloadState(ctx)
		cmd = sc.Run(ctx, s.rdb, keys, args...)
	}
	return cmd
}

// token returns a random string for lease tokens.
func token() string {
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// micros parses a time the scripts wrote: microseconds since the epoch.
func micros(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("%w: time %q", ErrBadData, s)
	}
	return time.UnixMicro(n).UTC(), nil
}

// checkCtx returns ctx's error, wrapped, when ctx has ended.
func checkCtx(ctx context.Context, op string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("redisstore: %s: %w", op, err)
	}
	return nil
}

// Dump returns every key under the store's prefix with its value, as a
// JSON object from key name to value (strings, hashes, lists and sorted
// sets as JSON strings, objects and arrays). It reads key by key, so it is
// a consistent snapshot only of a quiet store; it is meant for tests and
// debugging.
func (s *Store) Dump(ctx context.Context) ([]byte, error) {
	if err := checkCtx(ctx, "dump"); err != nil {
		return nil, err
	}
	out := make(map[string]any)
	dump := func(k string) error {
		typ, err := s.rdb.Type(ctx, k).Result()
		if err != nil {
			return s.wrap(ctx, "dump", err)
		}
		var v any
		switch typ {
		case "string":
			v, err = s.rdb.Get(ctx, k).Result()
		case "hash":
			v, err = s.rdb.HGetAll(ctx, k).Result()
		case "list":
			v, err = s.rdb.LRange(ctx, k, 0, -1).Result()
		case "set":
			v, err = s.rdb.SMembers(ctx, k).Result()
		case "zset":
			v, err = s.rdb.ZRangeWithScores(ctx, k, 0, -1).Result()
		case "none":
			return nil // expired meanwhile
		default:
			v = "(" + typ + ")"
		}
		if errors.Is(err, redis.Nil) {
			return nil
		}
		if err != nil {
			return s.wrap(ctx, "dump", err)
		}
		out[k] = v
		return nil
	}
	for k := range shardCount {
		if err := s.scan(ctx, globEscape(s.shardBase(k))+"*", dump); err != nil {
			return nil, err
		}
	}
	return json.Marshal(out)
}

// scan calls f with every key that matches pattern: on each master of a
// cluster, on the server otherwise.
func (s *Store) scan(ctx context.Context, pattern string, f func(key string) error) error {
	one := func(ctx context.Context, c redis.Cmdable) error {
		iter := c.Scan(ctx, 0, pattern, 1000).Iterator()
		for iter.Next(ctx) {
			if err := f(iter.Val()); err != nil {
				return err
			}
		}
		if err := iter.Err(); err != nil {
			return s.wrap(ctx, "scan", err)
		}
		return nil
	}
	if cc, ok := s.rdb.(*redis.ClusterClient); ok {
		var mu sync.Mutex // ForEachMaster runs masters concurrently
		return cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
			mu.Lock()
			defer mu.Unlock()
			return one(ctx, m)
		})
	}
	return one(ctx, s.rdb)
}

// globEscape escapes the characters SCAN's MATCH treats specially.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
