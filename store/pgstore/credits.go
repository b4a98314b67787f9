package pgstore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/validmail/validmail/credits"
)

// Balance implements [credits.Store].
func (s *Store) Balance(ctx context.Context, account string) (int64, error) {
	var bal int64
	err := s.pool.QueryRow(ctx, s.sql(`SELECT balance FROM {schema}.credit_balances WHERE account = $1`), account).Scan(&bal)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fail(ctx, "balance", err)
	}
	return bal, nil
}

// Apply implements [credits.Store]. It is one transaction: the entry is
// inserted first, so that a concurrent change under the same idempotency key
// waits on the unique index and then sees this one; then the balance is
// changed by a conditional update, which refuses an overdraft.
func (s *Store) Apply(ctx context.Context, c credits.Change) (credits.Entry, error) {
	if c.AccountID == "" || c.Delta == 0 {
		return credits.Entry{}, fmt.Errorf("%w: account %q, delta %d", credits.ErrInvalidAmount, c.AccountID, c.Delta)
	}
	var key *string
	if c.IdempotencyKey != "" {
		key = &c.IdempotencyKey
	}
	query := chargeSQL
	if c.Delta > 0 {
		query = grantSQL
	}
	for attempt := 1; ; attempt++ {
		var id int64
		var at time.Time
		err := s.pool.QueryRow(ctx, s.sql(query), c.AccountID, c.Delta, string(c.Reason), c.Reference, key).Scan(&id, &at)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			// A charge the balance does not cover, unless the key was used
			// before: a replay is answered whatever the balance now.
			if key != nil {
				if prev, err := s.replay(ctx, s.pool, c); !errors.Is(err, pgx.ErrNoRows) {
					return prev, err
				}
			}
			var bal int64
			err := s.pool.QueryRow(ctx, s.sql(`SELECT balance FROM {schema}.credit_balances WHERE account = $1`), c.AccountID).Scan(&bal)
			if err != nil && !errors.Is(err, pgx.ErrNoRows) {
				return credits.Entry{}, fail(ctx, "apply: balance", err)
			}
			// A balance read after the refusal that covers the charge
			// comes from a grant committed in between: the charge is
			// judged again, so that a refusal names a balance that does
			// not cover it.
			if bal >= -c.Delta && attempt < maxChargeAttempts {
				continue
			}
			return credits.Entry{}, &credits.InsufficientError{Balance: bal, Required: -c.Delta}
		case isUsedKey(err):
			return s.replay(ctx, s.pool, c)
		case err != nil:
			return credits.Entry{}, fail(ctx, "apply", err)
		}
		return written(c, id, at), nil
	}
}

// maxChargeAttempts bounds how often [Store.Apply] judges a charge again
// when the balance it reads after a refusal covers it (grants landing in
// between, each time).
const maxChargeAttempts = 3

// replay returns the entry written earlier under c's idempotency key
// (an error matching pgx.ErrNoRows when there is none), or an
// [credits.ErrIdempotencyConflict] when it differs from c.
func (s *Store) replay(ctx context.Context, q querier, c credits.Change) (credits.Entry, error) {
	e, err := s.entryByKey(ctx, q, c.AccountID, c.IdempotencyKey)
	if err != nil {
		return credits.Entry{}, err
	}
	if e.Delta != c.Delta || e.Reason != c.Reason {
		return credits.Entry{}, fmt.Errorf("%w: key %q", credits.ErrIdempotencyConflict, c.IdempotencyKey)
	}
	e.Replayed = true
	return e, nil
}

// written is the entry c wrote, with its id and time.
func written(c credits.Change, id int64, at time.Time) credits.Entry {
	return credits.Entry{
		ID:             strconv.FormatInt(id, 10),
		AccountID:      c.AccountID,
		Delta:          c.Delta,
		Reason:         c.Reason,
		Reference:      c.Reference,
		IdempotencyKey: c.IdempotencyKey,
		Time:           at,
	}
}

// chargeSQL and grantSQL change the balance and append the entry in one
// statement, one round trip, atomic as a statement is. The entry is
// written only with the balance's change: a charge the balance does not
// cover returns no row and writes nothing. An idempotency key used before
// (or by a concurrent call) violates the entries' unique index, which
// undoes the whole statement, balance included; the caller then answers
// the earlier entry.
const (
	chargeSQL = `
	WITH balance AS (
		UPDATE {schema}.credit_balances SET balance = balance + $2::bigint
		WHERE account = $1 AND balance >= -$2::bigint
		RETURNING balance
	)
	INSERT INTO {schema}.credit_entries (account, delta, reason, reference, idempotency_key)
	SELECT $1, $2, $3, $4, $5 FROM balance
	RETURNING id, created_at`
	grantSQL = `
	WITH balance AS (
		INSERT INTO {schema}.credit_balances AS b (account, balance) VALUES ($1, $2)
		ON CONFLICT (account) DO UPDATE SET balance = b.balance + EXCLUDED.balance
		RETURNING balance
	)
	INSERT INTO {schema}.credit_entries (account, delta, reason, reference, idempotency_key)
	SELECT $1, $2, $3, $4, $5 FROM balance
	RETURNING id, created_at`
)

// isUsedKey reports whether err is the violation of the entries' unique
// idempotency key.
func isUsedKey(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505" && pgErr.TableName == "credit_entries"
}

// applyTx appends the entry for c and changes the balance within tx. When
// c's idempotency key was already used it writes nothing and returns the
// earlier entry with replay set (or an [credits.ErrIdempotencyConflict]); the
// caller must then not commit anything it relies on c for.
func (s *Store) applyTx(ctx context.Context, tx pgx.Tx, c credits.Change) (e credits.Entry, replay bool, err error) {
	var key *string
	if c.IdempotencyKey != "" {
		key = &c.IdempotencyKey
	}
	var id int64
	var at time.Time
	err = tx.QueryRow(ctx, s.sql(`
		INSERT INTO {schema}.credit_entries (account, delta, reason, reference, idempotency_key)
		VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (account, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
		RETURNING id, created_at`),
		c.AccountID, c.Delta, string(c.Reason), c.Reference, key).Scan(&id, &at)
	if errors.Is(err, pgx.ErrNoRows) {
		prev, err := s.replay(ctx, tx, c)
		return prev, err == nil, err
	}
	if err != nil {
		return credits.Entry{}, false, fail(ctx, "apply", err)
	}
	if err := s.addBalance(ctx, tx, c.AccountID, c.Delta); err != nil {
		return credits.Entry{}, false, err
	}
	return written(c, id, at), false, nil
}

// addBalance adds delta to the account's balance within tx. A charge larger
// than the balance changes nothing and returns an [*credits.InsufficientError].
func (s *Store) addBalance(ctx context.Context, tx pgx.Tx, account string, delta int64) error {
	if delta > 0 {
		_, err := tx.Exec(ctx, s.sql(`
			INSERT INTO {schema}.credit_balances AS b (account, balance) VALUES ($1, $2)
			ON CONFLICT (account) DO UPDATE SET balance = b.balance + EXCLUDED.balance`), account, delta)
		return fail(ctx, "apply: balance", err)
	}
	tag, err := tx.Exec(ctx, s.sql(`
		UPDATE {schema}.credit_balances SET balance = balance + $2::bigint
		WHERE account = $1 AND balance >= -$2::bigint`), account, delta)
	if err != nil {
		return fail(ctx, "apply: balance", err)
	}
	if tag.RowsAffected() == 1 {
		return nil
	}
	var bal int64
	err = tx.QueryRow(ctx, s.sql(`SELECT balance FROM {schema}.credit_balances WHERE account = $1`), account).Scan(&bal)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return fail(ctx, "apply: balance", err)
	}
	return &credits.InsufficientError{Balance: bal, Required: -delta}
}

func (s *Store) entryByKey(ctx context.Context, q querier, account, key string) (credits.Entry, error) {
	var e credits.Entry
	var id int64
	var reason string
	err := q.QueryRow(ctx, s.sql(`
		SELECT id, delta, reason, reference, created_at FROM {schema}.credit_entries
		WHERE account = $1 AND idempotency_key = $2`), account, key).
		Scan(&id, &e.Delta, &reason, &e.Reference, &e.Time)
	if err != nil {
		return credits.Entry{}, fail(ctx, "apply: idempotency key", err)
	}
	e.ID = strconv.FormatInt(id, 10)
	e.AccountID = account
	e.Reason = credits.Reason(reason)
	e.IdempotencyKey = key
	return e, nil
}

// History implements [credits.Store].
func (s *Store) History(ctx context.Context, p credits.HistoryParams) ([]credits.Entry, error) {
	rows, err := s.pool.Query(ctx, s.sql(`
		SELECT id, delta, reason, reference, coalesce(idempotency_key, ''), created_at
		FROM {schema}.credit_entries WHERE account = $1 ORDER BY id`), p.AccountID)
	if err != nil {
		return nil, fail(ctx, "history", err)
	}
	var out []credits.Entry
	var id int64
	var reason string
	e := credits.Entry{AccountID: p.AccountID}
	_, err = pgx.ForEachRow(rows, []any{&id, &e.Delta, &reason, &e.Reference, &e.IdempotencyKey, &e.Time}, func() error {
		e.ID = strconv.FormatInt(id, 10)
		e.Reason = credits.Reason(reason)
		out = append(out, e)
		return nil
	})
	if err != nil {
		return nil, fail(ctx, "history", err)
	}
	return out, nil
}

// HistoryPage implements [credits.PageStore]: a backward range scan of the
// entries' (account, id) index, the page and one entry more.
func (s *Store) HistoryPage(ctx context.Context, p credits.PageParams) (credits.Page, error) {
	before := uint64(math.MaxInt64)
	if p.Before != "" {
		var err error
		if before, err = credits.ParseID(p.Before); err != nil {
			return credits.Page{}, err
		}
	}
	rows, err := s.pool.Query(ctx, s.sql(`
		SELECT id, delta, reason, reference, coalesce(idempotency_key, ''), created_at
		FROM {schema}.credit_entries WHERE account = $1 AND id < $2
		ORDER BY id DESC LIMIT $3`), p.AccountID, int64(before), p.Limit+1)
	if err != nil {
		return credits.Page{}, fail(ctx, "history page", err)
	}
	page := credits.Page{Entries: make([]credits.Entry, 0, min(p.Limit+1, 64))}
	var id int64
	var reason string
	e := credits.Entry{AccountID: p.AccountID}
	_, err = pgx.ForEachRow(rows, []any{&id, &e.Delta, &reason, &e.Reference, &e.IdempotencyKey, &e.Time}, func() error {
		e.ID = strconv.FormatInt(id, 10)
		e.Reason = credits.Reason(reason)
		page.Entries = append(page.Entries, e)
		return nil
	})
	if err != nil {
		return credits.Page{}, fail(ctx, "history page", err)
	}
	if len(page.Entries) > p.Limit {
		page.Entries, page.More = page.Entries[:p.Limit], true
	}
	return page, nil
}

// Totals implements [credits.TotalsStore] from the credit_totals table,
// which a trigger on the entries keeps in the statement writing them.
func (s *Store) Totals(ctx context.Context, p credits.TotalsParams) ([]credits.DayTotal, error) {
	rows, err := s.pool.Query(ctx, s.sql(`
		SELECT day, reason, total, entries FROM {schema}.credit_totals
		WHERE account = $1 AND day >= $2::date AND day < $3::date
		ORDER BY day, reason`), p.AccountID, p.From.UTC().Format(time.DateOnly), p.To.UTC().Format(time.DateOnly))
	if err != nil {
		return nil, fail(ctx, "totals", err)
	}
	out := []credits.DayTotal{}
	var t credits.DayTotal
	var reason string
	_, err = pgx.ForEachRow(rows, []any{&t.Day, &reason, &t.Sum, &t.Count}, func() error {
		t.Day = credits.Day(t.Day)
		t.Reason = credits.Reason(reason)
		out = append(out, t)
		return nil
	})
	if err != nil {
		return nil, fail(ctx, "totals", err)
	}
	return out, nil
}

var _ credits.GroupStore = (*Store)(nil)

// ApplyGroup implements [credits.GroupStore] with one call of the schema's
// credit_apply_group, one statement and one commit for the whole group.
// A key that another writer took while the group was judged (possible
// only for an account without a balance row yet, whose first changes are
// not serialised by its row lock) undoes the group, which is then applied
// change by change.
func (s *Store) ApplyGroup(ctx context.Context, cs []credits.Change) ([]credits.Entry, []error, error) {
	if len(cs) == 0 {
		return nil, nil, nil
	}
	if err := credits.CheckGroup(cs); err != nil {
		return nil, nil, err
	}
	account := cs[0].AccountID
	deltas := make([]int64, len(cs))
	reasons := make([]string, len(cs))
	refs := make([]string, len(cs))
	keys := make([]*string, len(cs))
	for i, c := range cs {
		if c.IdempotencyKey != "" {
			keys[i] = &cs[i].IdempotencyKey
		}
		deltas[i], reasons[i], refs[i] = c.Delta, string(c.Reason), c.Reference
	}
	rows, err := s.pool.Query(ctx, s.sql(`SELECT ord, outcome, entry_id, created, delta, reason, reference, balance
		FROM {schema}.credit_apply_group($1, $2, $3, $4, $5)`), account, deltas, reasons, refs, keys)
	if err != nil {
		return nil, nil, fail(ctx, "apply group", err)
	}
	type outcome struct {
		ord       *int32
		kind      string
		id        *int64
		at        *time.Time
		delta     int64
		reason    string
		reference string
		balance   *int64
	}
	var outs []outcome
	for rows.Next() {
		var o outcome
		if err := rows.Scan(&o.ord, &o.kind, &o.id, &o.at, &o.delta, &o.reason, &o.reference, &o.balance); err != nil {
			rows.Close()
			return nil, nil, fail(ctx, "apply group", err)
		}
		outs = append(outs, o)
	}
	if err := rows.Err(); err != nil {
		if isUsedKey(err) {
			return s.applyEach(ctx, cs)
		}
		return nil, nil, fail(ctx, "apply group", err)
	}
	entries := make([]credits.Entry, len(cs))
	errs := make([]error, len(cs))
	judged := make([]bool, len(cs))
	var wrote []outcome
	for _, o := range outs {
		if o.ord == nil {
			wrote = append(wrote, o)
			continue
		}
		i := int(*o.ord) - 1
		if i < 0 || i >= len(cs) || judged[i] {
			return nil, nil, fmt.Errorf("pgstore: apply group: outcome for change %d of %d", i+1, len(cs))
		}
		judged[i] = true
		c := cs[i]
		switch o.kind {
		case "replay":
			if o.delta != c.Delta || credits.Reason(o.reason) != c.Reason {
				errs[i] = fmt.Errorf("%w: key %q", credits.ErrIdempotencyConflict, c.IdempotencyKey)
				continue
			}
			e := written(credits.Change{AccountID: account, Delta: o.delta, Reason: credits.Reason(o.reason), Reference: o.reference, IdempotencyKey: c.IdempotencyKey}, *o.id, *o.at)
			e.Replayed = true
			entries[i] = e
		case "insufficient":
			errs[i] = &credits.InsufficientError{Balance: *o.balance, Required: -c.Delta}
		default:
			return nil, nil, fmt.Errorf("pgstore: apply group: outcome %q", o.kind)
		}
	}
	for i := range cs {
		if judged[i] {
			continue
		}
		if len(wrote) == 0 {
			return nil, nil, fmt.Errorf("pgstore: apply group: %d changes, fewer entries written", len(cs))
		}
		o := wrote[0]
		wrote = wrote[1:]
		entries[i] = written(cs[i], *o.id, *o.at)
	}
	return entries, errs, nil
}

// applyEach applies cs one by one, for a group that could not be applied
// as one.
func (s *Store) applyEach(ctx context.Context, cs []credits.Change) ([]credits.Entry, []error, error) {
	entries := make([]credits.Entry, len(cs))
	errs := make([]error, len(cs))
	for i, c := range cs {
		entries[i], errs[i] = s.Apply(ctx, c)
	}
	return entries, errs, nil
}
