package dashboard

import (
	"context"
	"sync"

	"github.com/validmail/validmail/httpapi"
	"github.com/validmail/validmail/jobs"
)

// maxSizedRows bounds the lists whose groups the batch page counts: each
// count reads the list's rows once.
const maxSizedRows = 100_000

// maxSizedLists bounds the counts remembered.
const maxSizedLists = 1000

// groupSizes remembers the rows of each group of completed lists, which
// no longer change: a list's rows are read once per instance.
type groupSizes struct {
	mu    sync.Mutex
	sizes map[string]map[httpapi.Group]int // batch id → group → rows
}

// of returns the rows of each group of a completed list of at most
// maxSizedRows rows; nil for another.
func (g *groupSizes) of(ctx context.Context, q *jobs.Queue, b jobs.Batch, info jobs.ListInfo) (map[httpapi.Group]int, error) {
	if b.State != jobs.StateCompleted || info.Rows > maxSizedRows {
		return nil, nil
	}
	g.mu.Lock()
	got, ok := g.sizes[b.ID]
	g.mu.Unlock()
	if ok {
		return got, nil
	}
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
			break
		}
		after = rows[len(rows)-1].N
	}
	g.mu.Lock()
	if g.sizes == nil || len(g.sizes) >= maxSizedLists {
		g.sizes = map[string]map[httpapi.Group]int{}
	}
	g.sizes[b.ID] = sizes
	g.mu.Unlock()
	return sizes, nil
}
