package redisstore

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/jobs/jobsdriver"
	"github.com/validmail/validmail/jobs/jobtype"
	"github.com/validmail/validmail/webhook"
)

// Enqueue implements [jobsdriver.Driver]: the ids come from one INCRBY-style
// counter step and every job is written by one script.
func (s *jobsDriver) Enqueue(ctx context.Context, p jobtype.EnqueueParams) ([]string, error) {
	if err := checkCtx(ctx, "enqueue"); err != nil {
		return nil, err
	}
	if len(p.Emails) == 0 {
		return nil, jobtype.ErrEmptyBatch
	}
	k := accountShard(p.AccountID)
	base := s.shardBase(k)
	args := make([]any, 0, 6+len(p.Emails))
	args = append(args, base+"job:", p.AccountID, strconv.FormatInt(p.Cost, 10), s.channel(), cmp.Or(p.Source, jobtype.SourceAPI), idOffset(k))
	for _, e := range p.Emails {
		args = append(args, e)
	}
	first, err := s.run(ctx, scriptEnqueue, []string{base + "seq:job", base + "rq:" + p.AccountID}, args...).Text()
	if err != nil {
		return nil, s.wrap(ctx, "enqueue", err)
	}
	s.busy.Or(1 << k)
	return idRange(first, len(p.Emails))
}

// EnqueueCharged implements [jobsdriver.ChargingDriver]: one script checks the
// batch's idempotency key (with the batch's size and fingerprint) and the
// balance, then writes the jobs and the charge.
func (s *jobsDriver) EnqueueCharged(ctx context.Context, p jobtype.EnqueueChargedParams) ([]string, error) {
	if err := checkCtx(ctx, "enqueue"); err != nil {
		return nil, err
	}
	if len(p.Emails) == 0 {
		return nil, jobtype.ErrEmptyBatch
	}
	if p.AccountID == "" {
		return nil, fmt.Errorf("%w: empty account", credits.ErrInvalidAmount)
	}
	ttl := cmp.Or(p.IdempotencyTTL, jobtype.DefaultIdempotencyTTL)
	k := accountShard(p.AccountID)
	base := s.shardBase(k)
	args := make([]any, 0, 8+len(p.Emails))
	args = append(args, base, p.AccountID, s.channel(), p.IdempotencyKey, p.Fingerprint,
		max(ttl.Milliseconds(), 1), cmp.Or(p.Source, jobtype.SourceAPI), idOffset(k))
	for _, e := range p.Emails {
		args = append(args, e)
	}
	keys := append([]string{base + "seq:job", base + "rq:" + p.AccountID, base + "idk:" + p.AccountID + ":" + p.IdempotencyKey}, s.creditKeys(p.AccountID)...)
	first, err := s.run(ctx, scriptEnqueueCharged, keys, args...).Text()
	if err != nil {
		return nil, s.creditErr(ctx, "enqueue", int64(len(p.Emails)), err)
	}
	s.busy.Or(1 << k)
	return idRange(first, len(p.Emails))
}

// idRange returns the n consecutive ids starting at first.
func idRange(first string, n int) ([]string, error) {
	f, err := strconv.ParseUint(first, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("%w: job id %q", ErrBadData, first)
	}
	ids := make([]string, n)
	for i := range ids {
		ids[i] = strconv.FormatUint(f+uint64(i), 10)
	}
	return ids, nil
}

// maxLease bounds the jobs one Lease call hands out (Lua's unpack limits
// the arguments of one command).
const maxLease = 1000

// Lease implements [jobsdriver.Driver]: one script moves due retries to the ready
// set, takes the lowest ids, and records each lease in the leases sorted
// set scored by its expiry. It hands out at most 1,000 jobs per call.
//
// On a cluster a master that cannot be reached costs only its own shards:
// they are asked on the master's own connections, which fail at once
// instead of retrying across the cluster's redirects, a shard that fails
// is skipped for [shardBackoff] while the others are leased from, and the
// call fails only when no shard that answered had work.
func (s *jobsDriver) Lease(ctx context.Context, p jobsdriver.LeaseParams) ([]jobsdriver.Lease, error) {
	if err := checkCtx(ctx, "lease"); err != nil {
		return nil, err
	}
	if p.Max < 1 || p.Duration <= 0 {
		return nil, fmt.Errorf("jobs: invalid lease request (max %d, duration %v)", p.Max, p.Duration)
	}
	// The shards are leased from round-robin, each call starting one
	// shard further, among those known to hold work, until Max jobs are
	// leased; which shards hold work is looked up again when none of them
	// does, and every probeEvery.
	var (
		out     []jobsdriver.Lease
		lastErr error
	)
	for probed := false; ; {
		mask := s.busy.Load() &^ s.downMask()
		// A look that seems to lie ahead was taken before the wall clock
		// stepped back: look again rather than wait for it to catch up.
		since := time.Now().UnixMicro() - s.probedAt.Load()
		if mask == 0 || since > probeEvery.Microseconds() || since < 0 {
			var err error
			if mask, err = s.probe(ctx); err != nil {
				return nil, err
			}
			probed = true
		}
		if mask == 0 {
			return nil, lastErr
		}
		// The shards with work share the lease in proportion to their
		// accounts with jobs ready (as last probed): each is first asked
		// for its share, then those that had more for what is left, so
		// that accounts in different shards take turns as those in one
		// do.
		start := int(s.next.Add(1))
		var weights [shardCount]int
		total := 0
		for k := range shardCount {
			if mask&(1<<k) != 0 && !s.isDown(k) {
				weights[k] = max(int(s.weights[k].Load()), 1)
				total += weights[k]
			}
		}
		// Rounds: every shard with work, then those that gave their
		// whole share, each asked in proportion for what is left.
		for round := 0; round < 4 && total > 0 && len(out) < p.Max; round++ {
			left := p.Max - len(out)
			next := 0
			for i := range shardCount {
				k := (start + i) % shardCount
				if weights[k] == 0 {
					continue
				}
				want := min(p.Max-len(out), (left*weights[k]+total-1)/total)
				if round == 3 {
					want = p.Max - len(out) // the last round takes what remains
				}
				if want == 0 {
					continue
				}
				ls, err := s.leaseShard(ctx, k, want, p.Duration)
				if err != nil {
					if ctx.Err() != nil {
						if len(out) > 0 {
							return out, nil
						}
						return nil, err
					}
					// Skipped while it fails: the other shards are
					// still leased from.
					s.markDown(ctx, k)
					lastErr = err
					weights[k] = 0
					continue
				}
				if len(ls) == 0 {
					s.busy.And(^uint32(1 << k))
				}
				if len(ls) < want {
					weights[k] = 0 // it has no more
				} else {
					next += weights[k]
				}
				if out == nil {
					out = ls // the common case, one shard: no copy
				} else {
					out = append(out, ls...)
				}
				if len(out) >= p.Max {
					return out, nil
				}
			}
			total = next
		}
		if len(out) > 0 {
			return out, nil
		}
		if probed {
			return nil, lastErr
		}
		// The shards thought busy were empty: look which are, once.
		s.probedAt.Store(0)
	}
}

// probeEvery is how often Lease looks again which shards hold work while
// some do, so that a shard whose work arrived from another process is
// found while others are busy.
const probeEvery = 100 * time.Millisecond

// shardBackoff is how long Lease leaves a shard alone after it failed: it
// is looked at again by the first probe after that. Short, so that work
// resumes soon after a failover, and long enough that a dead master is
// asked a few times a second, not on every call.
const shardBackoff = 250 * time.Millisecond

// isDown reports whether shard k failed less than [shardBackoff] ago.
func (s *Store) isDown(k int) bool { return downAt(s.down[k].Load(), time.Now().UnixMicro()) }

// downAt reports whether a shard left alone until until (µs) is still
// left alone at now. A mark further ahead than [shardBackoff] was made
// before the wall clock stepped back: it no longer holds.
func downAt(until, now int64) bool {
	return until > now && until-now <= shardBackoff.Microseconds()
}

// downMask returns the shards that failed less than [shardBackoff] ago.
func (s *Store) downMask() uint32 {
	now := time.Now().UnixMicro()
	var m uint32
	for k := range shardCount {
		if downAt(s.down[k].Load(), now) {
			m |= 1 << k
		}
	}
	return m
}

// markDown records that shard k failed, and with it, on a cluster, every
// shard of the same master, and has the cluster client look again which
// masters own which slots.
func (s *Store) markDown(ctx context.Context, k int) {
	until := time.Now().Add(shardBackoff).UnixMicro()
	cc, ok := s.rdb.(*redis.ClusterClient)
	if !ok {
		s.down[k].Store(until)
		return
	}
	cc.ReloadState(ctx)
	nodes := s.shardMasters(ctx, cc)
	for j := range shardCount {
		if j == k || (nodes[k] != nil && nodes[j] == nodes[k]) {
			s.down[j].Store(until)
		}
	}
}

// shardMasters returns the client of each shard's master by cc's current
// map of slots (nil where the map names none): the master's own pool of
// connections, without the cluster client's redirects and retries.
func (s *Store) shardMasters(ctx context.Context, cc *redis.ClusterClient) [shardCount]*redis.Client {
	var out [shardCount]*redis.Client
	for k := range shardCount {
		if m, err := cc.MasterForKey(ctx, s.shardBase(k)+"ready"); err == nil {
			out[k] = m
		}
	}
	return out
}

// redirected reports whether err is a reply that says a key's slot is
// served elsewhere: the map of slots a direct call went by was stale.
func redirected(err error) bool {
	var re redis.Error
	if !errors.As(err, &re) {
		return false
	}
	msg := re.Error()
	return strings.HasPrefix(msg, "MOVED ") || strings.HasPrefix(msg, "ASK ")
}

// probe looks up which shards have ready or due jobs, records it, and
// returns it as a bit mask. Shards that failed less than [shardBackoff]
// ago are left out unless all did. On a cluster each master is asked
// about its own shards, all masters at once, each in a pipeline on its
// own connections: a master that cannot be reached fails its shards,
// which are then skipped for [shardBackoff], and the probe fails only if
// every master did.
func (s *Store) probe(ctx context.Context) (uint32, error) {
	skip := s.downMask()
	if skip == 1<<shardCount-1 {
		skip = 0
	}
	cc, ok := s.rdb.(*redis.ClusterClient)
	if !ok {
		shards := ^skip & (1<<shardCount - 1)
		mask, err := s.probeShards(ctx, s.rdb, shards)
		if err != nil {
			return 0, s.wrap(ctx, "lease", err)
		}
		return s.probed(mask, shards), nil
	}
	// The shards by master, in the client's current map of slots.
	nodes := s.shardMasters(ctx, cc)
	groups := make(map[*redis.Client]uint32, 4)
	var fallback uint32 // no master known: through the cluster client
	for k, n := range nodes {
		switch {
		case skip&(1<<k) != 0:
		case n == nil:
			fallback |= 1 << k
		default:
			groups[n] |= 1 << k
		}
	}
	type task struct {
		c            redis.UniversalClient
		shards, mask uint32
		err          error
	}
	tasks := make([]task, 0, len(groups)+1)
	for c, shards := range groups {
		tasks = append(tasks, task{c: c, shards: shards})
	}
	if fallback != 0 {
		tasks = append(tasks, task{c: cc, shards: fallback})
	}
	ask := func(t *task) {
		t.mask, t.err = s.probeShards(ctx, t.c, t.shards)
		if redirected(t.err) {
			// The map was stale: the cluster client follows the
			// redirects, and looks again.
			cc.ReloadState(ctx)
			t.mask, t.err = s.probeShards(ctx, cc, t.shards)
		}
	}
	if len(tasks) == 1 {
		ask(&tasks[0])
	} else {
		var wg sync.WaitGroup
		for i := range tasks {
			wg.Go(func() { ask(&tasks[i]) })
		}
		wg.Wait()
	}
	var (
		mask, answered uint32
		lastErr        error
	)
	for _, r := range tasks {
		if r.err != nil {
			lastErr = r.err
			until := time.Now().Add(shardBackoff).UnixMicro()
			for k := range shardCount {
				if r.shards&(1<<k) != 0 {
					s.down[k].Store(until)
				}
			}
			continue
		}
		mask |= r.mask
		answered |= r.shards
	}
	if lastErr != nil {
		cc.ReloadState(ctx)
		if answered == 0 {
			return 0, s.wrap(ctx, "lease", lastErr)
		}
	}
	return s.probed(mask, answered), nil
}

// probeShards asks c which of shards (a bit mask) have ready or due jobs,
// in one pipeline.
func (s *Store) probeShards(ctx context.Context, c redis.UniversalClient, shards uint32) (uint32, error) {
	now := strconv.FormatInt(time.Now().UnixMicro(), 10)
	pipe := c.Pipeline()
	var accts, old, due [shardCount]*redis.IntCmd
	for k := range shardCount {
		if shards&(1<<k) == 0 {
			continue
		}
		base := s.shardBase(k)
		accts[k] = pipe.ZCard(ctx, base+"accts")
		old[k] = pipe.ZCard(ctx, base+"ready")
		due[k] = pipe.ZCount(ctx, base+"delayed", "-inf", now)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return 0, err
	}
	var mask uint32
	for k := range shardCount {
		if accts[k] != nil {
			s.weights[k].Store(int32(min(accts[k].Val(), 1<<20)))
		}
		if accts[k] != nil && (accts[k].Val() > 0 || old[k].Val() > 0 || due[k].Val() > 0) {
			mask |= 1 << k
		}
	}
	return mask, nil
}

// probed records what a probe found: mask, the busy shards among
// answered; the others keep their last known state.
func (s *Store) probed(mask, answered uint32) uint32 {
	for {
		old := s.busy.Load()
		if s.busy.CompareAndSwap(old, old&^answered|mask) {
			break
		}
	}
	s.probedAt.Store(time.Now().UnixMicro())
	return mask
}

// leaseShard leases at most limit jobs of shard k for d.
func (s *Store) leaseShard(ctx context.Context, k, limit int, d time.Duration) ([]jobsdriver.Lease, error) {
	// One script moves due retries to the ready set and leases from it, so
	// two workers never see the same job as available; the token is made
	// here, at random, and only its holder can change the job afterwards.
	// Leases are capped per call to keep each script short: Redis runs one
	// script at a time.
	base := s.shardBase(k)
	keys := []string{base + "delayed", base + "leases", base + "accts", base + "turn", base + "ready"}
	f, err := s.runShard(ctx, k, scriptLease, keys, base, min(limit, maxLease), max(d.Microseconds(), 1), token()).StringSlice()
	if err != nil {
		return nil, s.wrap(ctx, "lease", err)
	}
	// The reply is flat, twelve fields per job, to avoid a nested reply's
	// allocations on the hot path.
	const width = 12
	if len(f)%width != 0 {
		return nil, fmt.Errorf("%w: lease reply of %d fields", ErrBadData, len(f))
	}
	out := make([]jobsdriver.Lease, 0, len(f)/width)
	for i := 0; i < len(f); i += width {
		r := f[i : i+width]
		cost, err1 := strconv.ParseInt(r[3], 10, 64)
		errs, err2 := strconv.Atoi(cmp.Or(r[4], "0"))
		created, err3 := micros(r[6])
		exp, err4 := micros(r[8])
		unjudged, err5 := strconv.Atoi(r[11])
		if err := errors.Join(err1, err2, err3, err4, err5); err != nil {
			return nil, fmt.Errorf("%w: job %s: %v", ErrBadData, r[0], err)
		}
		out = append(out, jobsdriver.Lease{
			Job: jobtype.Job{
				ID:        r[0],
				AccountID: r[1],
				Email:     r[2],
				State:     jobtype.StateActive,
				Cost:      cost,
				Errors:    errs,
				LastError: r[5],
				Unjudged:  unjudged,
				CreatedAt: created,
				BatchID:   r[9],
				Source:    cmp.Or(r[10], jobtype.SourceAPI),
			},
			Token:     r[7],
			ExpiresAt: exp,
		})
	}
	return out, nil
}

// leaseErr translates a job script's failure.
func (s *Store) leaseErr(ctx context.Context, op string, err error) error {
	switch c, _ := code(err); c {
	case "NOTFOUND":
		return jobtype.ErrNotFound
	case "LEASELOST":
		return jobtype.ErrLeaseLost
	}
	return s.wrap(ctx, op, err)
}

// validID reports whether id is numeric text, as every job id is.
func validID(id string) bool {
	_, err := strconv.ParseUint(id, 10, 64)
	return err == nil
}

// Heartbeat implements [jobsdriver.Driver].
func (s *jobsDriver) Heartbeat(ctx context.Context, p jobsdriver.HeartbeatParams) (time.Time, error) {
	if err := checkCtx(ctx, "heartbeat"); err != nil {
		return time.Time{}, err
	}
	if !validID(p.ID) {
		return time.Time{}, jobtype.ErrNotFound
	}
	base := s.idBase(p.ID)
	keys := []string{base + "job:" + p.ID, base + "leases"}
	t, err := s.run(ctx, scriptHeartbeat, keys, p.ID, p.Token, max(p.Duration.Microseconds(), 1)).Text()
	if err != nil {
		return time.Time{}, s.leaseErr(ctx, "heartbeat", err)
	}
	return micros(t)
}

// storedResult is a result as stored: the JSON form plus the fields the
// JSON form leaves out.
type storedResult struct {
	emailcheck.Result
	MXHosts []string `json:"mx_hosts,omitempty"`
}

// Complete implements [jobsdriver.Driver]: the completion, the refund and the
// webhook delivery of the event are one script, which checks the lease
// token, the ledger's idempotency key, that the event id is new and every
// key's type before writing. A repeated event id fails with an error
// wrapping [webhook.ErrDuplicate] and changes nothing.
func (s *jobsDriver) Complete(ctx context.Context, p jobsdriver.CompleteParams) error {
	if err := checkCtx(ctx, "complete"); err != nil {
		return err
	}
	retention, fields, err := s.completeFields(p)
	if err != nil {
		return err
	}
	base := s.idBase(p.ID)
	args := append([]any{base, retention}, fields...)
	keys := []string{base + "job:" + p.ID, base + "leases", base + "done"}
	return s.completeErr(ctx, p, s.run(ctx, scriptComplete, keys, args...).Err())
}

// completeFields returns the retention (ms) of p's completion and its
// completeWidth fields of the completion scripts.
func (s *Store) completeFields(p jobsdriver.CompleteParams) (int64, []any, error) {
	if !validID(p.ID) {
		return 0, nil, jobtype.ErrNotFound
	}
	if p.Refund < 0 {
		return 0, nil, fmt.Errorf("%w: refund %d", credits.ErrInvalidAmount, p.Refund)
	}
	res, err := json.Marshal(storedResult{Result: p.Result, MXHosts: p.Result.MXHosts})
	if err != nil {
		return 0, nil, fmt.Errorf("redisstore: complete: encode result: %w", err)
	}
	// One retention for the deployment: the queue's, when it says.
	retention := s.retention
	if p.Retention > 0 {
		retention = max(p.Retention, time.Millisecond)
	}
	fields := make([]any, 0, completeWidth)
	fields = append(fields, p.ID, p.Token, res, strconv.FormatInt(p.Refund, 10), string(p.Result.Confidence.Status))
	if ev := p.Event; ev != nil {
		if ev.ID == "" {
			return 0, nil, fmt.Errorf("redisstore: complete: %w: empty event id", webhook.ErrInvalidEvent)
		}
		fields = append(fields, ev.ID, ev.Type, us(ev.CreatedAt), ev.Payload)
	} else {
		fields = append(fields, "", "", "", "")
	}
	if ev := p.BatchEvent; ev != nil {
		if ev.ID == "" {
			return 0, nil, fmt.Errorf("redisstore: complete: %w: empty event id", webhook.ErrInvalidEvent)
		}
		fields = append(fields, ev.ID, ev.Type, us(ev.CreatedAt))
	} else {
		fields = append(fields, "", "", "")
	}
	return retention.Milliseconds(), fields, nil
}

// completeErr translates a completion script's failure for p.
func (s *Store) completeErr(ctx context.Context, p jobsdriver.CompleteParams, err error) error {
	if err == nil {
		return nil
	}
	switch c, _ := code(err); c {
	case "CONFLICT":
		return fmt.Errorf("redisstore: complete: refund: %w", credits.ErrIdempotencyConflict)
	case "DUPLICATE":
		return fmt.Errorf("redisstore: complete job %s: %w", p.ID, webhook.ErrDuplicate)
	}
	return s.leaseErr(ctx, "complete", err)
}

// CompleteMany implements [jobsdriver.BatchCompleter]: one script completes
// every job, each atomically and independently (its checks, then its
// writes), in one round trip. If the script fails as a whole (a wrong key
// type, a refund conflicting with the ledger), the jobs are completed one
// by one, so the failure stays with its job.
func (s *jobsDriver) CompleteMany(ctx context.Context, ps []jobsdriver.CompleteParams) []error {
	errs := make([]error, len(ps))
	if err := checkCtx(ctx, "complete"); err != nil {
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	args := make([]any, 2, 2+completeWidth*len(ps))
	var sent []int
	for i, p := range ps {
		retention, fields, err := s.completeFields(p)
		if err != nil {
			errs[i] = err
			continue
		}
		if len(sent) == 0 {
			args[0], args[1] = s.idBase(p.ID), retention
		} else if retention != args[1] || s.idBase(p.ID) != args[0] {
			// A group is one queue's, with one retention, and one shard's
			// (as a lease is); if not, alone.
			errs[i] = s.Complete(ctx, p)
			continue
		}
		args = append(args, fields...)
		sent = append(sent, i)
	}
	if len(sent) == 0 {
		return errs
	}
	base := args[0].(string)
	codes, err := s.run(ctx, scriptCompleteMany, []string{base + "leases", base + "done"}, args...).StringSlice()
	if err == nil && len(codes) != len(sent) {
		err = fmt.Errorf("%w: %d answers for %d completions", ErrBadData, len(codes), len(sent))
	}
	if err != nil {
		if ctx.Err() != nil {
			for _, i := range sent {
				errs[i] = s.wrap(ctx, "complete", err)
			}
			return errs
		}
		for _, i := range sent {
			errs[i] = s.Complete(ctx, ps[i])
		}
		return errs
	}
	for k, i := range sent {
		switch codes[k] {
		case "":
		case "NOTFOUND":
			errs[i] = jobtype.ErrNotFound
		case "LEASELOST":
			errs[i] = jobtype.ErrLeaseLost
		case "DUPLICATE":
			errs[i] = fmt.Errorf("redisstore: complete job %s: %w", ps[i].ID, webhook.ErrDuplicate)
		default:
			errs[i] = fmt.Errorf("%w: completion answer %q", ErrBadData, codes[k])
		}
	}
	return errs
}

// Retry implements [jobsdriver.Driver]. A run-at puts the job in the delayed
// sorted set; Lease moves it back, to a new place in its account's queue,
// when it is due.
func (s *jobsDriver) Retry(ctx context.Context, p jobsdriver.RetryParams) error {
	if err := checkCtx(ctx, "retry"); err != nil {
		return err
	}
	if !validID(p.ID) {
		return jobtype.ErrNotFound
	}
	var at int64
	if !p.RunAt.IsZero() {
		at = p.RunAt.UnixMicro()
	}
	base := s.idBase(p.ID)
	keys := []string{base + "job:" + p.ID, base + "leases", base + "delayed", base + "accts"}
	err := s.run(ctx, scriptRetry, keys, p.ID, p.Token, at, p.Error, s.channel(), base, p.Unjudged).Err()
	return s.leaseErr(ctx, "retry", err)
}

// RescueExpired implements [jobsdriver.Driver]. The script rescues a job only if
// it is still running under an expired lease, so a job completed or
// re-leased meanwhile is left alone.
func (s *jobsDriver) RescueExpired(ctx context.Context, p jobsdriver.RescueParams) (int, error) {
	if err := checkCtx(ctx, "rescue"); err != nil {
		return 0, err
	}
	limit := p.Limit
	if limit <= 0 {
		limit = -1
	}
	total := 0
	for k := range shardCount {
		base := s.shardBase(k)
		n, err := s.run(ctx, scriptRescue, []string{base + "leases", base + "accts"}, base+"job:", limit, s.channel()).Int()
		if err != nil {
			return total, s.wrap(ctx, "rescue", err)
		}
		if n > 0 {
			s.busy.Or(1 << k)
		}
		total += n
		if limit > 0 {
			if limit -= n; limit == 0 {
				break
			}
		}
	}
	return total, nil
}

// Get implements [jobsdriver.Driver].
func (s *jobsDriver) Get(ctx context.Context, account, id string) (jobtype.Job, error) {
	if err := checkCtx(ctx, "get job"); err != nil {
		return jobtype.Job{}, err
	}
	if !validID(id) {
		return jobtype.Job{}, jobtype.ErrNotFound
	}
	m, err := s.rdb.HGetAll(ctx, s.idBase(id)+"job:"+id).Result()
	if err != nil {
		return jobtype.Job{}, s.wrap(ctx, "get job", err)
	}
	if len(m) == 0 || m["account"] != account {
		return jobtype.Job{}, jobtype.ErrNotFound
	}
	return jobFromHash(id, m)
}

func jobFromHash(id string, m map[string]string) (jobtype.Job, error) {
	j := jobtype.Job{ID: id, AccountID: m["account"], Email: m["email"], LastError: m["last_error"], State: jobtype.StateActive,
		BatchID: m["batch"], Source: cmp.Or(m["source"], jobtype.SourceAPI)}
	var err1, err2, err3, err4, err5 error
	j.Cost, err1 = strconv.ParseInt(m["cost"], 10, 64)
	j.Errors, err2 = strconv.Atoi(cmp.Or(m["errors"], "0"))
	j.CreatedAt, err3 = micros(m["created"])
	j.CompletedAt, err4 = micros(m["completed"])
	j.Unjudged, err5 = strconv.Atoi(cmp.Or(m["unjudged"], "0"))
	if err := errors.Join(err1, err2, err3, err4, err5); err != nil {
		return jobtype.Job{}, fmt.Errorf("%w: job %s: %v", ErrBadData, id, err)
	}
	if m["state"] == "d" {
		var r storedResult
		if err := json.Unmarshal([]byte(m["result"]), &r); err != nil {
			return jobtype.Job{}, fmt.Errorf("%w: job %s result: %v", ErrBadData, id, err)
		}
		r.Result.MXHosts = r.MXHosts
		j.State = jobtype.StateCompleted
		j.Result = &r.Result
	}
	return j, nil
}

// Cleanup implements [jobsdriver.Driver]. Completed jobs also expire on their own
// after [Config.Retention].
func (s *jobsDriver) Cleanup(ctx context.Context, p jobsdriver.CleanupParams) (int, error) {
	if err := checkCtx(ctx, "cleanup"); err != nil {
		return 0, err
	}
	limit := p.Limit
	if limit <= 0 {
		limit = -1
	}
	if err := s.cleanupLists(ctx); err != nil {
		return 0, err
	}
	total := 0
	for k := range shardCount {
		base := s.shardBase(k)
		n, err := s.run(ctx, scriptCleanup, []string{base + "done"}, base+"job:", p.CompletedBefore.UnixMicro(), limit).Int()
		if err != nil {
			return total, s.wrap(ctx, "cleanup", err)
		}
		total += n
		if limit > 0 {
			if limit -= n; limit == 0 {
				break
			}
		}
	}
	return total, nil
}

// Subscribe implements [jobsdriver.Notifier] with a Pub/Sub subscription to the
// channel the enqueueing scripts publish on. It returns once the server has
// confirmed the subscription; the subscription's connection is closed when
// ctx ends.
func (s *jobsDriver) Subscribe(ctx context.Context) (<-chan struct{}, error) {
	if err := checkCtx(ctx, "subscribe"); err != nil {
		return nil, err
	}
	// Wait for the subscription's confirmation, so that a job enqueued
	// after Subscribe returns is always announced to this subscriber.
	ps := s.rdb.Subscribe(ctx, s.channel())
	if _, err := ps.Receive(ctx); err != nil {
		ps.Close()
		return nil, s.wrap(ctx, "subscribe", err)
	}
	out := make(chan struct{}, 1)
	// Subscription confirmations come through too: go-redis re-subscribes
	// after a reconnect, and jobs published meanwhile were missed, so a
	// re-subscription wakes the workers like a message does.
	msgs := ps.ChannelWithSubscriptions()
	go func() {
		defer ps.Close()
		for {
			select {
			case <-ctx.Done():
				return
			case _, ok := <-msgs:
				if !ok {
					return
				}
				select {
				case out <- struct{}{}:
				default:
				}
			}
		}
	}()
	return out, nil
}

var _ jobsdriver.BatchDeferrer = (*jobsDriver)(nil)

// DeferMany implements [jobsdriver.BatchDeferrer]: one script per shard's jobs
// (a pool's deferrals are mostly of one shard, as its leases are); an item
// with an error or without a run-at goes through Retry.
func (s *jobsDriver) DeferMany(ctx context.Context, ps []jobsdriver.RetryParams) []error {
	errs := make([]error, len(ps))
	if err := checkCtx(ctx, "defer"); err != nil {
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	type shard struct {
		args []any
		at   []int
	}
	shards := map[string]*shard{}
	var order []string
	for i, p := range ps {
		switch {
		case !validID(p.ID):
			errs[i] = jobtype.ErrNotFound
			continue
		case p.Error != "" || p.RunAt.IsZero():
			errs[i] = s.Retry(ctx, p)
			continue
		}
		base := s.idBase(p.ID)
		sh := shards[base]
		if sh == nil {
			sh = &shard{args: []any{base}}
			shards[base] = sh
			order = append(order, base)
		}
		sh.args = append(sh.args, p.ID, p.Token, p.RunAt.UnixMicro())
		sh.at = append(sh.at, i)
	}
	for _, base := range order {
		sh := shards[base]
		codes, err := s.run(ctx, scriptDeferMany, []string{base + "leases", base + "delayed"}, sh.args...).StringSlice()
		if err == nil && len(codes) != len(sh.at) {
			err = fmt.Errorf("%w: %d answers for %d deferrals", ErrBadData, len(codes), len(sh.at))
		}
		for k, i := range sh.at {
			switch {
			case err != nil:
				errs[i] = s.wrap(ctx, "defer", err)
			case codes[k] == "":
			case codes[k] == "NOTFOUND":
				errs[i] = jobtype.ErrNotFound
			case codes[k] == "LEASELOST":
				errs[i] = jobtype.ErrLeaseLost
			default:
				errs[i] = fmt.Errorf("%w: deferral answer %q", ErrBadData, codes[k])
			}
		}
	}
	return errs
}
