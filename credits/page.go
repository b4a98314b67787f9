package credits

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"
)

// Errors reported by [Ledger.HistoryPage] and [Ledger.Totals], and by
// every [PageStore] and [TotalsStore].
var (
	// ErrInvalidCursor reports a [PageParams.Before] that is not an entry
	// id: a positive decimal integer without sign or leading zeros.
	ErrInvalidCursor = errors.New("credits: invalid cursor")
	// ErrInvalidRange reports a [TotalsParams] range that ends before it
	// starts or spans more than [MaxTotalsDays] days.
	ErrInvalidRange = errors.New("credits: invalid totals range")
)

// Page sizes of [Ledger.HistoryPage].
const (
	// DefaultPageLimit is the page size when [PageParams.Limit] is zero.
	DefaultPageLimit = 100
	// MaxPageLimit is the largest page.
	MaxPageLimit = 1000
)

// MaxTotalsDays is the longest range [Ledger.Totals] reads at once.
const MaxTotalsDays = 400

// PageParams selects one page of an account's history, newest first.
type PageParams struct {
	// AccountID is the account whose entries are listed; required.
	AccountID string
	// Before, when not empty, is an entry id (typically the last entry of
	// the previous page): the page holds only entries written before it.
	// Entries written since that page never shift it, so a reader paging
	// with Before neither skips nor repeats an entry.
	Before string
	// Limit is the most entries returned: 1 to [MaxPageLimit]; zero means
	// [DefaultPageLimit].
	Limit int
}

// Page is one page of history.
type Page struct {
	// Entries are the page's entries, newest first.
	Entries []Entry
	// More reports whether older entries follow the page's last entry:
	// pass its ID as [PageParams.Before] to read them.
	More bool
}

// TotalsParams selects the days of [Ledger.Totals].
type TotalsParams struct {
	// AccountID is the account; required.
	AccountID string
	// From and To bound the days read, [From, To): each is taken as the
	// UTC day it falls in, and To's day is excluded. At most
	// [MaxTotalsDays] days.
	From, To time.Time
}

// DayTotal is what one account's entries of one reason added up to on one
// UTC day.
type DayTotal struct {
	// Day is the day's first instant, in UTC.
	Day time.Time
	// Reason is the entries' reason.
	Reason Reason
	// Sum is the sum of their deltas: negative for charges.
	Sum int64
	// Count is how many entries there were.
	Count int64
}

// PageStore is a [Store] that reads a page of history without reading the
// rest. Its HistoryPage receives [PageParams] that [Ledger.HistoryPage]
// has checked, Limit set, and returns what HistoryPage returns. A Store
// without it is paged by reading its whole [Store.History].
type PageStore interface {
	Store
	HistoryPage(ctx context.Context, p PageParams) (Page, error)
}

// TotalsStore is a [Store] that keeps per-day totals as entries are
// written, in the same atomic step as each entry, so that reading them
// costs the same whatever the history's length. Its Totals receives a
// range [Ledger.Totals] has checked (From and To at UTC midnight) and
// returns every day and reason with entries in it, sorted by day, then
// reason. A Store without it is totalled from its whole [Store.History].
type TotalsStore interface {
	Store
	Totals(ctx context.Context, p TotalsParams) ([]DayTotal, error)
}

// HistoryPage returns one page of the account's history, newest first.
// A Before that is no entry id fails with [ErrInvalidCursor], a Limit out
// of range with [ErrInvalidAmount]. On a [PageStore] the cost is that of
// the page, whatever the history's length.
func (l *Ledger) HistoryPage(ctx context.Context, p PageParams) (Page, error) {
	if p.AccountID == "" {
		return Page{}, fmt.Errorf("%w: empty account", ErrInvalidAmount)
	}
	if p.Limit == 0 {
		p.Limit = DefaultPageLimit
	}
	if p.Limit < 0 || p.Limit > MaxPageLimit {
		return Page{}, fmt.Errorf("%w: page limit %d", ErrInvalidAmount, p.Limit)
	}
	if p.Before != "" {
		if _, err := ParseID(p.Before); err != nil {
			return Page{}, err
		}
	}
	if ps, ok := l.store.(PageStore); ok {
		return ps.HistoryPage(ctx, p)
	}
	hist, err := l.store.History(ctx, HistoryParams{AccountID: p.AccountID})
	if err != nil {
		return Page{}, err
	}
	return pageOf(hist, p), nil
}

// pageOf returns the page p selects from hist, an account's whole history
// oldest first, as [Ledger.HistoryPage] would; p must have been checked.
func pageOf(hist []Entry, p PageParams) Page {
	end := len(hist)
	if p.Before != "" {
		before, _ := ParseID(p.Before)
		end, _ = slices.BinarySearchFunc(hist, before, func(e Entry, id uint64) int {
			n, _ := ParseID(e.ID)
			switch {
			case n < id:
				return -1
			case n > id:
				return 1
			}
			return 0
		})
	}
	start := max(end-p.Limit, 0)
	page := Page{Entries: make([]Entry, 0, end-start), More: start > 0}
	for i := end - 1; i >= start; i-- {
		page.Entries = append(page.Entries, hist[i])
	}
	return page
}

// ParseID reads an entry id: a positive decimal integer, at most
// 2⁶³−1, without sign or leading zeros. Anything else fails with
// [ErrInvalidCursor].
func ParseID(id string) (uint64, error) {
	n, err := strconv.ParseUint(id, 10, 63)
	if err != nil || n == 0 || id[0] == '0' {
		return 0, fmt.Errorf("%w: %q", ErrInvalidCursor, truncate(id))
	}
	return n, nil
}

func truncate(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// Totals returns the account's per-day totals over p's days: for every UTC
// day and reason with entries, their sum and count, sorted by day, then
// reason. A range ending before it starts or longer than [MaxTotalsDays]
// fails with [ErrInvalidRange]. On a [TotalsStore] the cost is that of the
// days, whatever the history's length.
func (l *Ledger) Totals(ctx context.Context, p TotalsParams) ([]DayTotal, error) {
	if p.AccountID == "" {
		return nil, fmt.Errorf("%w: empty account", ErrInvalidAmount)
	}
	p.From, p.To = Day(p.From), Day(p.To)
	if p.To.Before(p.From) || p.To.Sub(p.From) > MaxTotalsDays*24*time.Hour {
		return nil, fmt.Errorf("%w: %s to %s", ErrInvalidRange, p.From.Format(time.DateOnly), p.To.Format(time.DateOnly))
	}
	if ts, ok := l.store.(TotalsStore); ok {
		return ts.Totals(ctx, p)
	}
	hist, err := l.store.History(ctx, HistoryParams{AccountID: p.AccountID})
	if err != nil {
		return nil, err
	}
	return TotalsOf(hist, p), nil
}

// TotalsOf adds up the entries of hist whose day falls in p's range, as
// [Ledger.Totals] returns them.
func TotalsOf(hist []Entry, p TotalsParams) []DayTotal {
	type dayReason struct {
		day    int64
		reason Reason
	}
	from, to := Day(p.From), Day(p.To)
	sums := map[dayReason]*DayTotal{}
	for _, e := range hist {
		if e.Time.Before(from) || !e.Time.Before(to) {
			continue
		}
		d := Day(e.Time)
		k := dayReason{d.Unix(), e.Reason}
		t := sums[k]
		if t == nil {
			t = &DayTotal{Day: d, Reason: e.Reason}
			sums[k] = t
		}
		t.Sum += e.Delta
		t.Count++
	}
	out := make([]DayTotal, 0, len(sums))
	for _, t := range sums {
		out = append(out, *t)
	}
	SortTotals(out)
	return out
}

// SortTotals sorts totals by day, then reason, as [TotalsStore] returns
// them.
func SortTotals(ts []DayTotal) {
	slices.SortFunc(ts, func(a, b DayTotal) int {
		if c := a.Day.Compare(b.Day); c != 0 {
			return c
		}
		switch {
		case a.Reason < b.Reason:
			return -1
		case a.Reason > b.Reason:
			return 1
		}
		return 0
	})
}

// Day returns the first instant of t's day in UTC.
func Day(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}
