package jobs

import (
	"context"
	"errors"
	"time"

	"github.com/validmail/validmail/jobs/jobsdriver"
)

// MaxListDraftMeta bounds a [ListDraft]'s Meta, in bytes.
const MaxListDraftMeta = 2 << 20

// MaxListDraftChunk bounds one chunk of a [ListDraft]'s body, in bytes.
const MaxListDraftChunk = 4 << 20

// ErrNoListDrafts reports a driver that does not implement
// [jobsdriver.ListDraftDriver].
var ErrNoListDrafts = errors.New("jobs: the driver keeps no list drafts")

// ErrListDraftTooLarge reports a draft's Meta or a chunk beyond its bound.
var ErrListDraftTooLarge = errors.New("jobs: list draft too large")

// ListDrafts returns the queue's driver as a [jobsdriver.ListDraftDriver], checking
// every call's arguments, or [ErrNoListDrafts].
func (q *Queue) ListDrafts() (jobsdriver.ListDraftDriver, error) {
	d, ok := q.driver.(jobsdriver.ListDraftDriver)
	if !ok {
		return nil, ErrNoListDrafts
	}
	return checkedDrafts{d}, nil
}

// checkedDrafts checks the arguments of every call before its driver
// sees them.
type checkedDrafts struct{ d jobsdriver.ListDraftDriver }

func badDraftID(id string) bool { return id == "" || len(id) > 128 }

func (c checkedDrafts) PutListDraftChunk(ctx context.Context, id string, n int, data []byte, expiresAt time.Time) error {
	switch {
	case badDraftID(id) || n < 0:
		return errors.New("jobs: bad list draft chunk")
	case len(data) > MaxListDraftChunk:
		return ErrListDraftTooLarge
	}
	return c.d.PutListDraftChunk(ctx, id, n, data, expiresAt)
}

func (c checkedDrafts) PutListDraft(ctx context.Context, p PutListDraftParams) (bool, error) {
	switch {
	case badDraftID(p.Draft.ID) || p.Draft.AccountID == "" || p.Draft.Chunks < 0:
		return false, errors.New("jobs: bad list draft")
	case len(p.Draft.Meta) > MaxListDraftMeta:
		return false, ErrListDraftTooLarge
	}
	return c.d.PutListDraft(ctx, p)
}

func (c checkedDrafts) ListDraft(ctx context.Context, accountID, id string) (ListDraft, error) {
	if badDraftID(id) || accountID == "" {
		return ListDraft{}, ErrNotFound
	}
	return c.d.ListDraft(ctx, accountID, id)
}

func (c checkedDrafts) ListDraftChunk(ctx context.Context, id string, n int) ([]byte, error) {
	if badDraftID(id) || n < 0 {
		return nil, ErrNotFound
	}
	return c.d.ListDraftChunk(ctx, id, n)
}

func (c checkedDrafts) TakeListDraft(ctx context.Context, accountID, id string) (ListDraft, error) {
	if badDraftID(id) || accountID == "" {
		return ListDraft{}, ErrNotFound
	}
	return c.d.TakeListDraft(ctx, accountID, id)
}

func (c checkedDrafts) DeleteListDraft(ctx context.Context, id string) error {
	if badDraftID(id) {
		return nil
	}
	return c.d.DeleteListDraft(ctx, id)
}
