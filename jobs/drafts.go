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

// ListDrafts returns the drafts of lists the queue's driver keeps, or
// [ErrNoListDrafts] when it keeps none.
func (q *Queue) ListDrafts() (*ListDrafts, error) {
	d, ok := q.driver.(jobsdriver.ListDraftDriver)
	if !ok {
		return nil, ErrNoListDrafts
	}
	return &ListDrafts{d}, nil
}

// ListDrafts keeps lists waiting for their owner's confirmation
// ([ListDraft]) in the store, shared by every process using it, so that
// any instance can show one, change it, submit it or drop it. It checks
// every call's arguments before the driver sees them. It is safe for
// concurrent use. A draft past its ExpiresAt, and chunks past theirs,
// are absent to every method.
type ListDrafts struct{ d jobsdriver.ListDraftDriver }

func badDraftID(id string) bool { return id == "" || len(id) > 128 }

// PutListDraftChunk stores chunk n of draft id's body, until expiresAt.
// Chunks are stored before their draft. A chunk above
// [MaxListDraftChunk]: [ErrListDraftTooLarge].
func (c *ListDrafts) PutListDraftChunk(ctx context.Context, id string, n int, data []byte, expiresAt time.Time) error {
	switch {
	case badDraftID(id) || n < 0:
		return errors.New("jobs: bad list draft chunk")
	case len(data) > MaxListDraftChunk:
		return ErrListDraftTooLarge
	}
	return c.d.PutListDraftChunk(ctx, id, n, data, expiresAt)
}

// PutListDraft stores the draft, dropping the account's other draft (an
// account has one at most) and, per p.PerNetwork, its network's oldest;
// kept is false when p.Restore finds another draft of the account
// (nothing is changed). Dropped drafts' chunks are removed. A Meta above
// [MaxListDraftMeta]: [ErrListDraftTooLarge].
func (c *ListDrafts) PutListDraft(ctx context.Context, p PutListDraftParams) (kept bool, err error) {
	switch {
	case badDraftID(p.Draft.ID) || p.Draft.AccountID == "" || p.Draft.Chunks < 0:
		return false, errors.New("jobs: bad list draft")
	case len(p.Draft.Meta) > MaxListDraftMeta:
		return false, ErrListDraftTooLarge
	}
	return c.d.PutListDraft(ctx, p)
}

// ListDraft returns the account's draft id; [ErrNotFound] for a missing,
// expired or taken one, or another account's.
func (c *ListDrafts) ListDraft(ctx context.Context, accountID, id string) (ListDraft, error) {
	if badDraftID(id) || accountID == "" {
		return ListDraft{}, ErrNotFound
	}
	return c.d.ListDraft(ctx, accountID, id)
}

// ListDraftChunk returns chunk n of draft id's body, even once the draft
// is taken; [ErrNotFound] when missing or expired.
func (c *ListDrafts) ListDraftChunk(ctx context.Context, id string, n int) ([]byte, error) {
	if badDraftID(id) || n < 0 {
		return nil, ErrNotFound
	}
	return c.d.ListDraftChunk(ctx, id, n)
}

// TakeListDraft removes the account's draft id and returns it, in one
// atomic step: of concurrent takes, one gets it, the others
// [ErrNotFound]. Its chunks stay until DeleteListDraft or their expiry.
func (c *ListDrafts) TakeListDraft(ctx context.Context, accountID, id string) (ListDraft, error) {
	if badDraftID(id) || accountID == "" {
		return ListDraft{}, ErrNotFound
	}
	return c.d.TakeListDraft(ctx, accountID, id)
}

// DeleteListDraft removes draft id, if still there, and its chunks.
func (c *ListDrafts) DeleteListDraft(ctx context.Context, id string) error {
	if badDraftID(id) {
		return nil
	}
	return c.d.DeleteListDraft(ctx, id)
}
