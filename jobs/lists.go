package jobs

import (
	"context"
	"errors"

	"github.com/validmail/validmail/jobs/jobsdriver"
)

// ErrNoLists reports a driver that does not implement [jobsdriver.ListDriver].
var ErrNoLists = errors.New("jobs: the driver keeps no lists")

// BeginList starts a list on the queue's driver.
func (q *Queue) BeginList(ctx context.Context, p BeginListParams) (ListWriter, error) {
	ld, ok := q.driver.(jobsdriver.ListDriver)
	if !ok {
		return nil, ErrNoLists
	}
	if p.AccountID == "" {
		return nil, errors.New("jobs: empty account")
	}
	if p.Free < 0 {
		return nil, errors.New("jobs: negative free addresses")
	}
	if p.Column < 0 || (len(p.Header) > 0 && p.Column >= len(p.Header)) {
		return nil, errors.New("jobs: list column out of range")
	}
	if p.IdempotencyKey != "" && p.IdempotencyTTL <= 0 {
		p.IdempotencyTTL = q.idemTTL
	}
	return ld.BeginList(ctx, p)
}

// List describes the account's list of the batch ([ErrNotFound] for a batch
// that is not a list).
func (q *Queue) List(ctx context.Context, accountID, batchID string) (ListInfo, error) {
	ld, ok := q.driver.(jobsdriver.ListDriver)
	if !ok {
		return ListInfo{}, ErrNoLists
	}
	return ld.List(ctx, accountID, batchID)
}

// ListRows returns a page of a list's rows, in upload order.
func (q *Queue) ListRows(ctx context.Context, p ListRowsParams) ([]ListRow, error) {
	ld, ok := q.driver.(jobsdriver.ListDriver)
	if !ok {
		return nil, ErrNoLists
	}
	if p.Limit < 1 {
		return nil, errors.New("jobs: ListRows needs a positive limit")
	}
	return ld.ListRows(ctx, p)
}
