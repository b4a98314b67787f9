package dashboard

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/validmail/validmail/httpapi"
	"github.com/validmail/validmail/jobs"
)

// maxSizedRows bounds the lists whose groups the batch page counts while
// it answers: each count reads the list's rows once. A larger list's
// groups are counted in the background, one list at a time per instance.
const maxSizedRows = 100_000

// maxSizedLists bounds the counts remembered.
const maxSizedLists = 1000

// bigCountTimeout bounds the background count of a large list's groups
// (a million rows are read in about a minute on a shared store).
const bigCountTimeout = 15 * time.Minute

// groupSizes remembers the rows of each group of completed lists, which
// no longer change: a list's rows are read once per instance, and never
// while a page waits for more than syncRows of them.
type groupSizes struct {
	mu    sync.Mutex
	sizes map[string]map[httpapi.Group]int // batch id → group → rows
	// counting is the list whose groups are counted in the background;
	// "" when none is.
	counting string
	// syncRows is the most rows counted while a page waits; 0 means
	// maxSizedRows.
	syncRows int
}

// of returns the rows of each group of a completed list; nil for a list
// still running, and for a large list whose groups are not counted yet:
// counting then tells that they are being counted, in the background
// (started now if no other list is), for the page to say so.
func (g *groupSizes) of(ctx context.Context, q *jobs.Queue, b jobs.Batch, info jobs.ListInfo, logger *slog.Logger) (sizes map[httpapi.Group]int, counting bool, err error) {
	if b.State != jobs.StateCompleted {
		return nil, false, nil
	}
	g.mu.Lock()
	got, ok := g.sizes[b.ID]
	limit := g.syncRows
	if limit == 0 {
		limit = maxSizedRows
	}
	big := info.Rows > limit
	start := big && !ok && g.counting == ""
	if start {
		g.counting = b.ID
	}
	counting = big && !ok && g.counting == b.ID
	g.mu.Unlock()
	if ok {
		return got, false, nil
	}
	if !big {
		sizes, err := countGroups(ctx, q, info)
		if err != nil {
			return nil, false, err
		}
		g.remember(b.ID, sizes)
		return sizes, false, nil
	}
	if start {
		ctx = context.WithoutCancel(ctx)
		go func() {
			ctx, cancel := context.WithTimeout(ctx, bigCountTimeout)
			defer cancel()
			sizes, err := countGroups(ctx, q, info)
			if err != nil {
				logger.WarnContext(ctx, "dashboard: counting a list's groups", "batch", b.ID, "rows", info.Rows, "err", err)
			} else {
				g.remember(b.ID, sizes)
			}
			g.mu.Lock()
			g.counting = ""
			g.mu.Unlock()
		}()
	}
	return nil, counting, nil
}

// remember keeps a completed list's sizes.
func (g *groupSizes) remember(batchID string, sizes map[httpapi.Group]int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.sizes == nil || len(g.sizes) >= maxSizedLists {
		g.sizes = map[string]map[httpapi.Group]int{}
	}
	g.sizes[batchID] = sizes
}

// countGroups reads a list's rows once, 1,000 at a time, counting the
// rows of each group.
func countGroups(ctx context.Context, q *jobs.Queue, info jobs.ListInfo) (map[httpapi.Group]int, error) {
	sizes := map[httpapi.Group]int{}
	for after := -1; ; {
		rows, err := q.ListRows(ctx, jobs.ListRowsParams{AccountID: info.AccountID, BatchID: info.BatchID, After: after, Limit: 1000})
		if err != nil {
			return nil, err
		}
		for _, r := range rows {
			if r.Job == nil {
				sizes[httpapi.GroupRemove]++
			} else if r.Job.State == jobs.StateCompleted {
				sizes[httpapi.GroupOf(r.Job.Result)]++
			}
		}
		if len(rows) < 1000 {
			return sizes, nil
		}
		after = rows[len(rows)-1].N
	}
}
