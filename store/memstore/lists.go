package memstore

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/jobs/jobsdriver"
	"github.com/validmail/validmail/jobs/jobtype"
)

var _ jobsdriver.ListDriver = (*jobsDriver)(nil)

// memList is a committed list: its description and rows.
type memList struct {
	info jobtype.ListInfo
	rows []memRow
}

// memRow is a list's row: its fields and its job's id (0 for a row that
// is not an address).
type memRow struct {
	record []string
	job    uint64
}

// listWriter stages a list in the writer alone; Commit writes it under the
// store's lock.
type listWriter struct {
	s      *Store
	p      jobtype.BeginListParams
	rows   []memRow
	unique map[string]int // key → index in emails
	emails []string
	dups   int
	junk   int
	closed bool
}

// BeginList implements [jobsdriver.ListDriver]: nothing reaches the store before
// Commit.
func (s *jobsDriver) BeginList(ctx context.Context, p jobtype.BeginListParams) (jobtype.ListWriter, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	return &listWriter{s: s.Store, p: p, rows: make([]memRow, 0, max(p.Rows, 0)), unique: make(map[string]int)}, nil
}

// Append implements [jobtype.ListWriter]. A row's job is recorded as the
// index of its address plus one until Commit knows the ids.
func (w *listWriter) Append(ctx context.Context, rows []jobtype.ListRow) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	if w.closed {
		return jobtype.ErrListClosed
	}
	for _, r := range rows {
		row := memRow{record: slices.Clone(r.Record)}
		switch i, seen := w.unique[r.Key]; {
		case r.Key == "":
			w.junk++
		case seen:
			w.dups++
			row.job = uint64(i) + 1
		default:
			w.unique[r.Key] = len(w.emails)
			w.emails = append(w.emails, r.Email)
			row.job = uint64(len(w.emails))
		}
		w.rows = append(w.rows, row)
	}
	return nil
}

// Commit implements [jobtype.ListWriter]: the charge, the jobs, the batch and
// the rows are written under one lock.
func (w *listWriter) Commit(ctx context.Context) (jobtype.ListInfo, error) {
	if err := ctxErr(ctx); err != nil {
		return jobtype.ListInfo{}, err
	}
	if w.closed {
		return jobtype.ListInfo{}, jobtype.ErrListClosed
	}
	w.closed = true
	if len(w.emails) == 0 {
		return jobtype.ListInfo{}, jobtype.ErrEmptyBatch
	}
	s := w.s
	n := int64(len(w.emails))
	cost, charged := int64(0), int64(0)
	s.mu.Lock()
	defer s.mu.Unlock()
	if info, ok, err := s.replayListLocked(w.p); ok {
		w.rows, w.unique, w.emails = nil, nil, nil
		return info, err
	}
	free := min(int64(w.p.Free), n)
	c := credits.Change{AccountID: w.p.AccountID, Delta: free - n, Reason: credits.ReasonCharge}
	if w.p.Charge {
		if c.Delta < 0 {
			if _, err := s.checkLocked(c); err != nil {
				return jobtype.ListInfo{}, err
			}
		}
		cost, charged = 1, n-free
	}
	ids := s.enqueueLocked(jobtype.EnqueueParams{AccountID: w.p.AccountID, Emails: w.emails, Cost: cost, Source: w.p.Source})
	first, _ := strconv.ParseUint(ids[0], 10, 64)
	if w.p.Charge {
		for i := range free {
			s.jobs[first+uint64(i)].Cost = 0
		}
		if c.Delta < 0 {
			c.Reference = "list:" + ids[0]
			s.writeLocked(c)
		}
	}
	s.tallies[first].name = w.p.Name
	for i := range w.rows {
		if w.rows[i].job != 0 {
			w.rows[i].job += first - 1
		}
	}
	info := jobtype.ListInfo{
		BatchID: ids[0], AccountID: w.p.AccountID, Name: w.p.Name,
		Header: slices.Clone(w.p.Header), Column: w.p.Column,
		Rows: len(w.rows), Addresses: len(w.emails), Duplicates: w.dups, InvalidRows: w.junk,
		Charged: charged,
	}
	s.lists[first] = &memList{info: info, rows: w.rows}
	if w.p.IdempotencyKey != "" {
		m := s.batches[w.p.AccountID]
		if m == nil {
			m = make(map[string]batch)
			s.batches[w.p.AccountID] = m
		}
		ttl := cmp.Or(w.p.IdempotencyTTL, jobtype.DefaultIdempotencyTTL)
		m[w.p.IdempotencyKey] = batch{IDs: []string{ids[0]}, Fingerprint: w.p.Fingerprint, Expires: now().Add(ttl)}
	}
	w.rows, w.unique, w.emails = nil, nil, nil
	return info, nil
}

// replayListLocked answers a list whose idempotency key names an
// unexpired list: ok and that list's description (Replayed) when the
// fingerprints match, ok and an error when they do not or the list is
// gone, not ok when the key names nothing.
func (s *Store) replayListLocked(p jobtype.BeginListParams) (jobtype.ListInfo, bool, error) {
	if p.IdempotencyKey == "" {
		return jobtype.ListInfo{}, false, nil
	}
	b, found := s.batches[p.AccountID][p.IdempotencyKey]
	if !found || !now().Before(b.Expires) {
		return jobtype.ListInfo{}, false, nil
	}
	if len(b.IDs) != 1 || b.Fingerprint != p.Fingerprint {
		return jobtype.ListInfo{}, true, fmt.Errorf("%w: key %q", credits.ErrIdempotencyConflict, p.IdempotencyKey)
	}
	l := s.listLocked(p.AccountID, b.IDs[0])
	if l == nil {
		return jobtype.ListInfo{}, true, jobtype.ErrBatchReplayed
	}
	info := l.info
	info.Header = slices.Clone(info.Header)
	info.Replayed = true
	return info, true, nil
}

// Abort implements [jobtype.ListWriter].
func (w *listWriter) Abort(context.Context) error {
	w.closed = true
	w.rows, w.unique, w.emails = nil, nil, nil
	return nil
}

// listLocked returns the account's list of the batch, or nil.
func (s *Store) listLocked(account, batchID string) *memList {
	if s.tallyLocked(account, batchID) == nil {
		return nil
	}
	n, _ := strconv.ParseUint(batchID, 10, 64)
	return s.lists[n]
}

// List implements [jobsdriver.ListDriver].
func (s *jobsDriver) List(ctx context.Context, accountID, batchID string) (jobtype.ListInfo, error) {
	if err := ctxErr(ctx); err != nil {
		return jobtype.ListInfo{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.listLocked(accountID, batchID)
	if l == nil {
		return jobtype.ListInfo{}, jobtype.ErrNotFound
	}
	info := l.info
	info.Header = slices.Clone(info.Header)
	return info, nil
}

// ListRows implements [jobsdriver.ListDriver].
func (s *jobsDriver) ListRows(ctx context.Context, p jobtype.ListRowsParams) ([]jobtype.ListRow, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.listLocked(p.AccountID, p.BatchID)
	if l == nil {
		return nil, jobtype.ErrNotFound
	}
	from := max(p.After+1, 0)
	if from >= len(l.rows) {
		return nil, nil
	}
	rows := l.rows[from:min(from+p.Limit, len(l.rows))]
	out := make([]jobtype.ListRow, len(rows))
	for i, r := range rows {
		out[i] = jobtype.ListRow{N: from + i, Record: slices.Clone(r.record)}
		if r.job == 0 {
			continue
		}
		if j, ok := s.jobs[r.job]; ok {
			c := j.Job
			if j.Result != nil {
				res := *j.Result
				c.Result = &res
			}
			out[i].Job = &c
		}
	}
	return out, nil
}
