package jobs

import (
	"context"
	"errors"
	"time"
)

// MaxListDraftMeta bounds a [ListDraft]'s Meta, in bytes.
const MaxListDraftMeta = 2 << 20

// MaxListDraftChunk bounds one chunk of a [ListDraft]'s body, in bytes.
const MaxListDraftChunk = 4 << 20

// ListDraft is a list read and checked, waiting in the store for its
// owner's confirmation, so that any instance sharing the store can show
// it, change it, submit it or drop it. Its body (the read list) is kept
// in Chunks numbered from 0, stored apart ([ListDraftDriver]).
type ListDraft struct {
	// ID names the draft: an unguessable token, at most 128 bytes.
	ID string
	// AccountID owns the draft; required.
	AccountID string
	// Network is the uploader's client network (a ratelimit.ClientKey),
	// for the bound per network; may be empty.
	Network string
	// Meta is the caller's description of the list (its preview,
	// columns, name), opaque to the store; at most [MaxListDraftMeta].
	Meta []byte
	// Chunks counts the body's chunks.
	Chunks int
	// ExpiresAt ends the draft: after it, it is as if deleted.
	ExpiresAt time.Time
}

// PutListDraftParams describes a draft for [ListDraftDriver.PutListDraft].
type PutListDraftParams struct {
	Draft ListDraft
	// PerNetwork, when positive and the draft has a Network, bounds the
	// drafts of that network: the oldest ones are dropped (with their
	// chunks) to make room for this one.
	PerNetwork int
	// Restore keeps the draft only if its account has no draft now (it
	// was taken, and its account uploaded another meanwhile); otherwise
	// the account's draft, if any, is dropped (with its chunks) for this
	// one: an account has one draft at most.
	Restore bool
}

// ListDraftDriver is implemented by drivers that keep lists waiting for
// their confirmation ([ListDraft]), shared by every process using the
// store. Every method is safe for concurrent use. A draft past its
// ExpiresAt, and chunks past theirs, are absent to every method, and
// removed by the driver in time.
type ListDraftDriver interface {
	// PutListDraftChunk stores chunk n of draft id's body, until
	// expiresAt. Chunks are stored before their draft.
	PutListDraftChunk(ctx context.Context, id string, n int, data []byte, expiresAt time.Time) error
	// PutListDraft stores the draft, dropping the account's other draft
	// and, per p.PerNetwork, its network's oldest; kept is false when
	// p.Restore finds another draft of the account (nothing is changed).
	// Dropped drafts' chunks are removed.
	PutListDraft(ctx context.Context, p PutListDraftParams) (kept bool, err error)
	// ListDraft returns the account's draft id; [ErrNotFound] for a
	// missing, expired or taken one, or another account's.
	ListDraft(ctx context.Context, accountID, id string) (ListDraft, error)
	// ListDraftChunk returns chunk n of draft id's body, even once the
	// draft is taken; [ErrNotFound] when missing or expired.
	ListDraftChunk(ctx context.Context, id string, n int) ([]byte, error)
	// TakeListDraft removes the account's draft id and returns it, in one
	// atomic step: of concurrent takes, one gets it, the others
	// [ErrNotFound]. Its chunks stay until DeleteListDraft or their
	// expiry.
	TakeListDraft(ctx context.Context, accountID, id string) (ListDraft, error)
	// DeleteListDraft removes draft id, if still there, and its chunks.
	DeleteListDraft(ctx context.Context, id string) error
}

// ErrNoListDrafts reports a driver that does not implement
// [ListDraftDriver].
var ErrNoListDrafts = errors.New("jobs: the driver keeps no list drafts")

// ErrListDraftTooLarge reports a draft's Meta or a chunk beyond its bound.
var ErrListDraftTooLarge = errors.New("jobs: list draft too large")

// ListDrafts returns the queue's driver as a [ListDraftDriver], checking
// every call's arguments, or [ErrNoListDrafts].
func (q *Queue) ListDrafts() (ListDraftDriver, error) {
	d, ok := q.driver.(ListDraftDriver)
	if !ok {
		return nil, ErrNoListDrafts
	}
	return checkedDrafts{d}, nil
}

// checkedDrafts checks the arguments of every call before its driver
// sees them.
type checkedDrafts struct{ d ListDraftDriver }

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
