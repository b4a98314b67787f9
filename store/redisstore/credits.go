package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
	"github.com/validmail/validmail/credits"
)

// Balance implements [credits.Store].
func (s *Store) Balance(ctx context.Context, account string) (int64, error) {
	if err := checkCtx(ctx, "balance"); err != nil {
		return 0, err
	}
	v, err := s.rdb.Get(ctx, s.acctKey(account, "bal:"+account)).Result()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, s.wrap(ctx, "balance", err)
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: balance %q", ErrBadData, v)
	}
	return n, nil
}

// Apply implements [credits.Store] with one script that checks the
// idempotency key and the balance before it writes the entry.
func (s *Store) Apply(ctx context.Context, c credits.Change) (credits.Entry, error) {
	if err := checkCtx(ctx, "apply"); err != nil {
		return credits.Entry{}, err
	}
	if c.AccountID == "" || c.Delta == 0 {
		return credits.Entry{}, fmt.Errorf("%w: account %q, delta %d", credits.ErrInvalidAmount, c.AccountID, c.Delta)
	}
	res, err := s.run(ctx, scriptApply, s.creditKeys(c.AccountID), c.AccountID, strconv.FormatInt(c.Delta, 10),
		string(c.Reason), c.Reference, c.IdempotencyKey).Slice()
	if err != nil {
		return credits.Entry{}, s.creditErr(ctx, "apply", -c.Delta, err)
	}
	if len(res) != 2 {
		return credits.Entry{}, fmt.Errorf("%w: apply reply %v", ErrBadData, res)
	}
	raw, _ := res[1].(string)
	e, err := decodeEntry(raw)
	if err != nil {
		return credits.Entry{}, err
	}
	e.Replayed = res[0] == int64(1)
	return e, nil
}

// creditKeys returns the ledger keys of account, in the order the scripts
// take them: balance, history, idempotency index, entry counter, totals.
func (s *Store) creditKeys(account string) []string {
	b := s.acctBase(account)
	return []string{b + "bal:" + account, b + "hist:" + account, b + "idem:" + account, b + "seq:entry",
		b + "ctot:" + account}
}

// creditErr translates a script's failure to the credits sentinels;
// required is the amount a charge asked for.
func (s *Store) creditErr(ctx context.Context, op string, required int64, err error) error {
	c, args := code(err)
	switch c {
	case "INSUFFICIENT":
		var bal int64
		if len(args) > 0 {
			bal, _ = strconv.ParseInt(args[0], 10, 64)
		}
		return &credits.InsufficientError{Balance: bal, Required: required}
	case "CONFLICT":
		return fmt.Errorf("redisstore: %s: %w", op, credits.ErrIdempotencyConflict)
	}
	return s.wrap(ctx, op, err)
}

// History implements [credits.Store].
func (s *Store) History(ctx context.Context, p credits.HistoryParams) ([]credits.Entry, error) {
	if err := checkCtx(ctx, "history"); err != nil {
		return nil, err
	}
	raw, err := s.rdb.LRange(ctx, s.acctKey(p.AccountID, "hist:"+p.AccountID), 0, -1).Result()
	if err != nil {
		return nil, s.wrap(ctx, "history", err)
	}
	out := make([]credits.Entry, 0, len(raw))
	for _, r := range raw {
		e, err := decodeEntry(r)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// entryJSON is an entry as the scripts write it.
type entryJSON struct {
	ID        string `json:"id"`
	Account   string `json:"account"`
	Delta     string `json:"delta"`
	Reason    string `json:"reason"`
	Reference string `json:"ref"`
	Key       string `json:"key"`
	Time      string `json:"t"`
}

func decodeEntry(raw string) (credits.Entry, error) {
	var j entryJSON
	if err := json.Unmarshal([]byte(raw), &j); err != nil {
		return credits.Entry{}, fmt.Errorf("%w: ledger entry: %v", ErrBadData, err)
	}
	d, err := strconv.ParseInt(j.Delta, 10, 64)
	if err != nil {
		return credits.Entry{}, fmt.Errorf("%w: ledger entry delta %q", ErrBadData, j.Delta)
	}
	t, err := micros(j.Time)
	if err != nil {
		return credits.Entry{}, err
	}
	return credits.Entry{
		ID:             j.ID,
		AccountID:      j.Account,
		Delta:          d,
		Reason:         credits.Reason(j.Reason),
		Reference:      j.Reference,
		IdempotencyKey: j.Key,
		Time:           t,
	}, nil
}

var _ credits.GroupStore = (*Store)(nil)

// ApplyGroup implements [credits.GroupStore] with one script call for the
// whole group.
func (s *Store) ApplyGroup(ctx context.Context, cs []credits.Change) ([]credits.Entry, []error, error) {
	if err := checkCtx(ctx, "apply group"); err != nil {
		return nil, nil, err
	}
	if err := credits.CheckGroup(cs); err != nil {
		return nil, nil, err
	}
	if len(cs) == 0 {
		return nil, nil, nil
	}
	args := make([]any, 0, 1+4*len(cs))
	args = append(args, cs[0].AccountID)
	for _, c := range cs {
		args = append(args, strconv.FormatInt(c.Delta, 10), string(c.Reason), c.Reference, c.IdempotencyKey)
	}
	res, err := s.run(ctx, scriptApplyGroup, s.creditKeys(cs[0].AccountID), args...).StringSlice()
	if err != nil {
		return nil, nil, s.wrap(ctx, "apply group", err)
	}
	if len(res) != len(cs) {
		return nil, nil, fmt.Errorf("%w: apply group: %d outcomes for %d changes", ErrBadData, len(res), len(cs))
	}
	entries := make([]credits.Entry, len(cs))
	errs := make([]error, len(cs))
	for i, r := range res {
		kind, rest := "", ""
		if r != "" {
			kind, rest = r[:1], r[1:]
		}
		switch kind {
		case "W", "R":
			e, err := decodeEntry(rest)
			if err != nil {
				return nil, nil, err
			}
			e.Replayed = kind == "R"
			entries[i] = e
		case "C":
			errs[i] = fmt.Errorf("redisstore: apply group: %w", credits.ErrIdempotencyConflict)
		case "I":
			bal, _ := strconv.ParseInt(rest, 10, 64)
			errs[i] = &credits.InsufficientError{Balance: bal, Required: -cs[i].Delta}
		default:
			return nil, nil, fmt.Errorf("%w: apply group outcome %q", ErrBadData, r)
		}
	}
	return entries, errs, nil
}
