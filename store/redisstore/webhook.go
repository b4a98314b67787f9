package redisstore

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/validmail/validmail/webhook"
)

var (
	_ webhook.Outbox    = (*Webhooks)(nil)
	_ webhook.Endpoints = (*Webhooks)(nil)
)

// Webhooks is the webhook side of a [Store]: its outbox
// ([webhook.Outbox]) and endpoints ([webhook.Endpoints]), under the same
// prefix. The event a job completion records ([jobsdriver.CompleteParams.Event])
// is written by the completion's own script, so it is a pending delivery
// from the instant the job is completed; a batch's last completion writes
// its batch.completed event with the batch's final counts in the
// delivery's batch field ([webhook.Event.Batch]), which every read turns
// into the event's bytes ([webhook.Event.Expand]); deliveries an earlier
// release wrote with the counts in the payload
// ([webhook.StoreBatchCompleted]) are read alike.
//
// Every state change is one script and a compare-and-set on the lease
// token. The times the methods take (lease and due times, attempt and
// finish times) are the caller's; the server's clock is not used.
//
// It is a separate type because the job queue's methods on Store already
// carry the names Enqueue and Lease; [Store.Backend] hands out both.
type Webhooks struct{ s *Store }

// us returns t in microseconds since the epoch as text, or "" for the
// zero time.
func us(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return strconv.FormatInt(t.UnixMicro(), 10)
}

// whErr translates a webhook script's failure.
func (w *Webhooks) whErr(ctx context.Context, op string, err error) error {
	switch c, _ := code(err); c {
	case "NOTFOUND":
		return webhook.ErrNotFound
	case "LEASELOST":
		return webhook.ErrLeaseLost
	case "DUPLICATE":
		return webhook.ErrDuplicate
	case "CHANGED":
		return webhook.ErrEndpointChanged
	}
	return w.s.wrap(ctx, op, err)
}

// Enqueue implements [webhook.Outbox].
func (w *Webhooks) Enqueue(ctx context.Context, ev webhook.Event) error {
	if err := checkCtx(ctx, "webhook enqueue"); err != nil {
		return err
	}
	if ev.ID == "" {
		return fmt.Errorf("%w: empty event id", webhook.ErrInvalidEvent)
	}
	s := w.s
	base := s.acctBase(ev.AccountID)
	keys := []string{base + "wh:ev:" + ev.ID, base + "wh:due", base + "wh:acct:" + ev.AccountID}
	var batch []byte // empty for none
	payload := ev.Payload
	if ev.Batch != nil {
		batch, _ = json.Marshal(ev.Batch) // strings and ints always encode
		if len(payload) == 0 {
			// As the releases before the field read it.
			payload = webhook.StoreBatchCompleted(*ev.Batch)
		}
	}
	err := s.run(ctx, scriptWebhookEnqueue, keys, base, ev.ID, ev.AccountID, ev.Type, ev.JobID, us(ev.CreatedAt), payload, batch).Err()
	if err != nil {
		return w.whErr(ctx, "webhook enqueue", err)
	}
	return nil
}

// deliveryWidth is the number of fields a script returns per delivery
// after its id (and token): the script's dfields.
const deliveryWidth = 11

// storedAttempt is an attempt as the attempts JSON array holds it.
type storedAttempt struct {
	At       int64  `json:"t"` // µs since the epoch
	Duration int64  `json:"d"` // ns
	Status   int    `json:"c,omitempty"`
	Error    string `json:"e,omitempty"`
	URL      string `json:"u,omitempty"`
}

// parseDelivery reads a delivery's dfields.
func parseDelivery(id string, f []string) (webhook.Delivery, error) {
	d := webhook.Delivery{Event: webhook.Event{ID: id, AccountID: f[0], Type: f[1], JobID: f[2], Payload: []byte(f[4])}}
	var err1, err2, err3 error
	d.CreatedAt, err1 = micros(f[3])
	d.NextAttempt, err2 = micros(f[6])
	d.FinishedAt, err3 = micros(f[8])
	if err := errors.Join(err1, err2, err3); err != nil {
		return webhook.Delivery{}, fmt.Errorf("%w: delivery %s: %v", ErrBadData, id, err)
	}
	switch f[5] {
	case "p":
		d.State = webhook.StatePending
	case "d":
		d.State = webhook.StateDelivered
	case "x":
		d.State = webhook.StateDead
	default:
		return webhook.Delivery{}, fmt.Errorf("%w: delivery %s: state %q", ErrBadData, id, f[5])
	}
	d.Reason = f[9]
	if f[10] != "" {
		d.Batch = new(webhook.BatchCompleted)
		if err := json.Unmarshal([]byte(f[10]), d.Batch); err != nil {
			return webhook.Delivery{}, fmt.Errorf("%w: delivery %s batch: %v", ErrBadData, id, err)
		}
	}
	// A batch.completed event written by a completion holds the batch's
	// final counts (in batch, or in an earlier release's payload); the
	// webhook package makes its bytes.
	if err := d.Expand(); err != nil {
		return webhook.Delivery{}, fmt.Errorf("%w: delivery %s: %v", ErrBadData, id, err)
	}
	if f[7] != "" {
		var as []storedAttempt
		if err := json.Unmarshal([]byte(f[7]), &as); err != nil {
			return webhook.Delivery{}, fmt.Errorf("%w: delivery %s attempts: %v", ErrBadData, id, err)
		}
		d.Attempts = make([]webhook.Attempt, len(as))
		for i, a := range as {
			d.Attempts[i] = webhook.Attempt{
				At:         time.UnixMicro(a.At).UTC(),
				Duration:   time.Duration(a.Duration),
				StatusCode: a.Status,
				Error:      a.Error,
				URL:        a.URL,
			}
		}
	}
	return d, nil
}

// Lease implements [webhook.Outbox]: one script takes the front of the
// due set, where a leased delivery sits at its lease expiry, and moves
// each delivery it leases to its new expiry.
func (w *Webhooks) Lease(ctx context.Context, p webhook.LeaseParams) ([]webhook.Delivery, error) {
	if err := checkCtx(ctx, "webhook lease"); err != nil {
		return nil, err
	}
	if p.Limit <= 0 {
		return nil, fmt.Errorf("webhook: lease limit %d is not positive", p.Limit)
	}
	s := w.s
	// The front of every shard's due set, in one pipeline, merged by due
	// time: each shard is then leased as many as it has among the first
	// p.Limit, and the deliveries are returned in due order.
	now := strconv.FormatInt(p.Now.UnixMicro(), 10)
	pipe := s.rdb.Pipeline()
	fronts := make([]*redis.ZSliceCmd, shardCount)
	for k := range fronts {
		fronts[k] = pipe.ZRangeByScoreWithScores(ctx, s.shardBase(k)+"wh:due",
			&redis.ZRangeBy{Min: "-inf", Max: now, Count: int64(min(p.Limit, maxLease))})
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, w.whErr(ctx, "webhook lease", err)
	}
	type due struct {
		score float64
		id    string
		shard int
	}
	var all []due
	for k, c := range fronts {
		for _, z := range c.Val() {
			id, _ := z.Member.(string)
			all = append(all, due{z.Score, id, k})
		}
	}
	order := func(a, b due) int {
		if c := cmp.Compare(a.score, b.score); c != 0 {
			return c
		}
		return strings.Compare(a.id, b.id)
	}
	slices.SortFunc(all, order)
	all = all[:min(len(all), p.Limit)]
	var quota [shardCount]int
	rank := make(map[string]due, len(all))
	for _, d := range all {
		quota[d.shard]++
		rank[d.id] = d
	}
	var out []webhook.Delivery
	for k, n := range quota {
		if n == 0 {
			continue
		}
		ds, err := w.leaseShard(ctx, k, p, n)
		if err != nil {
			return out, err
		}
		out = append(out, ds...)
	}
	slices.SortStableFunc(out, func(a, b webhook.Delivery) int {
		ra, oka := rank[a.ID]
		rb, okb := rank[b.ID]
		switch {
		case oka && okb:
			return order(ra, rb)
		case oka:
			return -1
		case okb:
			return 1
		}
		return 0
	})
	return out, nil
}

// leaseShard leases at most limit deliveries of shard k. Their tokens
// start with the shard ("K-"), which is how [Webhooks.change] finds it.
func (w *Webhooks) leaseShard(ctx context.Context, k int, p webhook.LeaseParams, limit int) ([]webhook.Delivery, error) {
	s := w.s
	base := s.shardBase(k)
	exp := p.Now.Add(p.Duration)
	f, err := s.run(ctx, scriptWebhookLease, []string{base + "wh:due"}, base+"wh:ev:",
		p.Now.UnixMicro(), min(limit, maxLease), exp.UnixMicro(), strconv.Itoa(k)+"-"+token()).StringSlice()
	if err != nil {
		return nil, w.whErr(ctx, "webhook lease", err)
	}
	const width = 2 + deliveryWidth
	if len(f)%width != 0 {
		return nil, fmt.Errorf("%w: webhook lease reply of %d fields", ErrBadData, len(f))
	}
	out := make([]webhook.Delivery, 0, len(f)/width)
	for i := 0; i < len(f); i += width {
		d, err := parseDelivery(f[i], f[i+2:i+width])
		if err != nil {
			return nil, err
		}
		d.Lease = webhook.Lease{EventID: f[i], Token: f[i+1], Expires: time.UnixMicro(exp.UnixMicro()).UTC()}
		out = append(out, d)
	}
	return out, nil
}

// change runs the change script for op on the delivery l holds.
func (w *Webhooks) change(ctx context.Context, op string, l webhook.Lease, args ...any) error {
	if err := checkCtx(ctx, "webhook "+op); err != nil {
		return err
	}
	s := w.s
	// The token names the shard; a token without one is shard 0's.
	k := 0
	if sh, _, ok := strings.Cut(l.Token, "-"); ok {
		if n, err := strconv.Atoi(sh); err == nil && n >= 0 && n < shardCount {
			k = n
		}
	}
	base := s.shardBase(k)
	keys := []string{base + "wh:ev:" + l.EventID, base + "wh:due", base + "wh:finished"}
	err := s.run(ctx, scriptWebhookChange, keys, append([]any{l.EventID, l.Token, op}, args...)...).Err()
	if err != nil {
		err = w.whErr(ctx, "webhook "+op, err)
		if errors.Is(err, webhook.ErrNotFound) && w.existsElsewhere(ctx, l.EventID, k) {
			// A token that names the wrong shard holds no lease.
			return webhook.ErrLeaseLost
		}
		return err
	}
	return nil
}

// existsElsewhere reports whether delivery id exists in a shard other
// than k.
func (w *Webhooks) existsElsewhere(ctx context.Context, id string, k int) bool {
	pipe := w.s.rdb.Pipeline()
	cmds := make([]*redis.IntCmd, 0, shardCount-1)
	for j := range shardCount {
		if j != k {
			cmds = append(cmds, pipe.Exists(ctx, w.s.shardBase(j)+"wh:ev:"+id))
		}
	}
	pipe.Exec(ctx)
	for _, c := range cmds {
		if c.Val() > 0 {
			return true
		}
	}
	return false
}

// RecordAttempt implements [webhook.Outbox].
func (w *Webhooks) RecordAttempt(ctx context.Context, l webhook.Lease, a webhook.Attempt) error {
	b, err := json.Marshal(storedAttempt{At: a.At.UnixMicro(), Duration: int64(a.Duration), Status: a.StatusCode, Error: a.Error, URL: a.URL})
	if err != nil {
		return fmt.Errorf("redisstore: webhook attempt: %w", err)
	}
	return w.change(ctx, "attempt", l, b)
}

// Reschedule implements [webhook.Outbox].
func (w *Webhooks) Reschedule(ctx context.Context, l webhook.Lease, next time.Time) error {
	return w.change(ctx, "reschedule", l, next.UnixMicro())
}

// MarkDelivered implements [webhook.Outbox].
func (w *Webhooks) MarkDelivered(ctx context.Context, l webhook.Lease, at time.Time) error {
	return w.change(ctx, "deliver", l, at.UnixMicro(), "")
}

// MarkDead implements [webhook.Outbox].
func (w *Webhooks) MarkDead(ctx context.Context, l webhook.Lease, at time.Time, reason string) error {
	return w.change(ctx, "dead", l, at.UnixMicro(), reason)
}

// Deliveries implements [webhook.Outbox]. It reads the account's index
// and the deliveries in one script, so the list is a consistent snapshot.
func (w *Webhooks) Deliveries(ctx context.Context, p webhook.ListParams) ([]webhook.Delivery, error) {
	if err := checkCtx(ctx, "webhook deliveries"); err != nil {
		return nil, err
	}
	limit := p.Limit
	if limit <= 0 {
		limit = webhook.DefaultListLimit
	}
	s := w.s
	before, beforeID := "", ""
	if p.Before != nil {
		before, beforeID = strconv.FormatInt(p.Before.CreatedAt.UnixMicro(), 10), p.Before.ID
	}
	base := s.acctBase(p.AccountID)
	f, err := s.run(ctx, scriptWebhookList, []string{base + "wh:acct:" + p.AccountID}, base+"wh:ev:", limit, before, beforeID).StringSlice()
	if err != nil {
		return nil, w.whErr(ctx, "webhook deliveries", err)
	}
	const width = 1 + deliveryWidth
	if len(f)%width != 0 {
		return nil, fmt.Errorf("%w: webhook list reply of %d fields", ErrBadData, len(f))
	}
	out := make([]webhook.Delivery, 0, len(f)/width)
	for i := 0; i < len(f); i += width {
		d, err := parseDelivery(f[i], f[i+1:i+width])
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// Pending implements [webhook.Outbox]: every pending delivery, leased or
// not, is in the due set.
func (w *Webhooks) Pending(ctx context.Context) (int, error) {
	if err := checkCtx(ctx, "webhook pending"); err != nil {
		return 0, err
	}
	pipe := w.s.rdb.Pipeline()
	cmds := make([]*redis.IntCmd, shardCount)
	for k := range cmds {
		cmds[k] = pipe.ZCard(ctx, w.s.shardBase(k)+"wh:due")
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return 0, w.s.wrap(ctx, "webhook pending", err)
	}
	n := 0
	for _, c := range cmds {
		n += int(c.Val())
	}
	return n, nil
}

// OldestPending implements [webhook.OldestPender]: the lowest score of
// wh:due, the due time of a waiting delivery or the lease expiry of a
// leased one.
func (w *Webhooks) OldestPending(ctx context.Context) (time.Time, error) {
	if err := checkCtx(ctx, "webhook oldest pending"); err != nil {
		return time.Time{}, err
	}
	pipe := w.s.rdb.Pipeline()
	cmds := make([]*redis.ZSliceCmd, shardCount)
	for k := range cmds {
		cmds[k] = pipe.ZRangeWithScores(ctx, w.s.shardBase(k)+"wh:due", 0, 0)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return time.Time{}, w.s.wrap(ctx, "webhook oldest pending", err)
	}
	var oldest time.Time
	for _, c := range cmds {
		if zs := c.Val(); len(zs) > 0 {
			if t := time.UnixMicro(int64(zs[0].Score)).UTC(); oldest.IsZero() || t.Before(oldest) {
				oldest = t
			}
		}
	}
	return oldest, nil
}

// pruneBatch bounds the deliveries one prune script looks at.
const pruneBatch = 500

// Prune implements [webhook.Outbox]. It deletes in batches of a few
// hundred, one script each.
func (w *Webhooks) Prune(ctx context.Context, before time.Time) (int, error) {
	s := w.s
	total := 0
	for k := range shardCount {
		base := s.shardBase(k)
		for {
			if err := checkCtx(ctx, "webhook prune"); err != nil {
				return total, err
			}
			r, err := s.run(ctx, scriptWebhookPrune, []string{base + "wh:finished"}, base, before.UnixMicro(), pruneBatch).Int64Slice()
			if err != nil {
				return total, w.whErr(ctx, "webhook prune", err)
			}
			if len(r) != 2 {
				return total, fmt.Errorf("%w: prune reply %v", ErrBadData, r)
			}
			total += int(r[0])
			if r[1] < pruneBatch {
				break
			}
		}
	}
	return total, nil
}

// endpointFrom reads an endpoint hash.
func endpointFrom(account string, m map[string]string) (webhook.Endpoint, error) {
	e := webhook.Endpoint{
		AccountID:      account,
		URL:            m["url"],
		Enabled:        m["enabled"] == "1",
		Secret:         m["secret"],
		DisabledReason: m["reason"],
	}
	if ev := m["events"]; ev != "" {
		e.Events = strings.Split(ev, ",")
	}
	var err1, err2 error
	e.CreatedAt, err1 = micros(m["created"])
	e.UpdatedAt, err2 = micros(m["updated"])
	if err := errors.Join(err1, err2); err != nil {
		return webhook.Endpoint{}, fmt.Errorf("%w: endpoint of %s: %v", ErrBadData, account, err)
	}
	for _, word := range strings.Fields(m["prev"]) {
		exp, sec, ok := strings.Cut(word, ":")
		t, err := micros(exp)
		if !ok || err != nil {
			return webhook.Endpoint{}, fmt.Errorf("%w: endpoint of %s: previous secret", ErrBadData, account)
		}
		e.PreviousSecrets = append(e.PreviousSecrets, webhook.PreviousSecret{Secret: sec, ExpiresAt: t})
	}
	return e, nil
}

// pairs turns an HGETALL-style reply into a map.
func pairs(f []string) (map[string]string, error) {
	if len(f)%2 != 0 {
		return nil, fmt.Errorf("%w: hash reply of %d fields", ErrBadData, len(f))
	}
	m := make(map[string]string, len(f)/2)
	for i := 0; i < len(f); i += 2 {
		m[f[i]] = f[i+1]
	}
	return m, nil
}

// GetEndpoint implements [webhook.Endpoints].
func (w *Webhooks) GetEndpoint(ctx context.Context, accountID string) (webhook.Endpoint, error) {
	if err := checkCtx(ctx, "get endpoint"); err != nil {
		return webhook.Endpoint{}, err
	}
	m, err := w.s.rdb.HGetAll(ctx, w.s.acctKey(accountID, "wh:ep:"+accountID)).Result()
	if err != nil {
		return webhook.Endpoint{}, w.s.wrap(ctx, "get endpoint", err)
	}
	if len(m) == 0 {
		return webhook.Endpoint{}, webhook.ErrNotFound
	}
	return endpointFrom(accountID, m)
}

// PutEndpoint implements [webhook.Endpoints].
func (w *Webhooks) PutEndpoint(ctx context.Context, p webhook.PutEndpointParams) (webhook.Endpoint, bool, error) {
	if err := checkCtx(ctx, "put endpoint"); err != nil {
		return webhook.Endpoint{}, false, err
	}
	_, secretErr := webhook.ParseSecret(p.Secret)
	valid, enabled := "0", "0"
	if secretErr == nil {
		valid = "1"
	}
	if p.Enabled {
		enabled = "1"
	}
	f, err := w.s.run(ctx, scriptEndpointPut, []string{w.s.acctKey(p.AccountID, "wh:ep:"+p.AccountID)},
		p.URL, enabled, p.Secret, valid, us(p.Now), strings.Join(webhook.NormalizeEvents(p.Events), ",")).Slice()
	if err != nil {
		if c, _ := code(err); c == "INVALIDSECRET" {
			return webhook.Endpoint{}, false, secretErr
		}
		return webhook.Endpoint{}, false, w.whErr(ctx, "put endpoint", err)
	}
	if len(f) == 0 {
		return webhook.Endpoint{}, false, fmt.Errorf("%w: empty put reply", ErrBadData)
	}
	created, _ := f[0].(int64)
	fields := make([]string, 0, len(f)-1)
	for _, v := range f[1:] {
		str, ok := v.(string)
		if !ok {
			return webhook.Endpoint{}, false, fmt.Errorf("%w: put reply", ErrBadData)
		}
		fields = append(fields, str)
	}
	m, err := pairs(fields)
	if err != nil {
		return webhook.Endpoint{}, false, err
	}
	e, err := endpointFrom(p.AccountID, m)
	return e, created == 1, err
}

// DeleteEndpoint implements [webhook.Endpoints].
func (w *Webhooks) DeleteEndpoint(ctx context.Context, accountID string) error {
	if err := checkCtx(ctx, "delete endpoint"); err != nil {
		return err
	}
	n, err := w.s.rdb.Del(ctx, w.s.acctKey(accountID, "wh:ep:"+accountID)).Result()
	if err != nil {
		return w.s.wrap(ctx, "delete endpoint", err)
	}
	if n == 0 {
		return webhook.ErrNotFound
	}
	return nil
}

// RotateSecret implements [webhook.Endpoints].
func (w *Webhooks) RotateSecret(ctx context.Context, p webhook.RotateSecretParams) (webhook.Endpoint, error) {
	if err := checkCtx(ctx, "rotate secret"); err != nil {
		return webhook.Endpoint{}, err
	}
	if _, err := webhook.ParseSecret(p.Secret); err != nil {
		return webhook.Endpoint{}, err
	}
	f, err := w.s.run(ctx, scriptEndpointRotate, []string{w.s.acctKey(p.AccountID, "wh:ep:"+p.AccountID)},
		p.Secret, p.Now.UnixMicro(), p.PreviousExpiresAt.UnixMicro()).StringSlice()
	if err != nil {
		return webhook.Endpoint{}, w.whErr(ctx, "rotate secret", err)
	}
	m, err := pairs(f)
	if err != nil {
		return webhook.Endpoint{}, err
	}
	return endpointFrom(p.AccountID, m)
}

// DisableEndpoint implements [webhook.Endpoints].
func (w *Webhooks) DisableEndpoint(ctx context.Context, p webhook.DisableEndpointParams) error {
	if err := checkCtx(ctx, "disable endpoint"); err != nil {
		return err
	}
	err := w.s.run(ctx, scriptEndpointDisable, []string{w.s.acctKey(p.AccountID, "wh:ep:"+p.AccountID)}, p.URL, p.Reason, us(p.Now)).Err()
	if err != nil {
		return w.whErr(ctx, "disable endpoint", err)
	}
	return nil
}
