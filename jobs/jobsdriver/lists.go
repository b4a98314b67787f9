package jobsdriver

import (
	"context"
	"time"

	"github.com/validmail/validmail/jobs/jobtype"
)

// ListDriver is implemented by drivers that take whole lists: one batch of
// one job per unique address, whose rows (any number) keep the uploaded
// columns and map to the jobs.
type ListDriver interface {
	BeginList(ctx context.Context, p jobtype.BeginListParams) (jobtype.ListWriter, error)
	// List describes the account's list of the batch; a batch that is not
	// a list, another account's and an unknown one are [jobtype.ErrNotFound].
	List(ctx context.Context, accountID, batchID string) (jobtype.ListInfo, error)
	// ListRows returns a page of a list's rows with their jobs.
	ListRows(ctx context.Context, p jobtype.ListRowsParams) ([]jobtype.ListRow, error)
}

// ListDraftDriver is implemented by drivers that keep lists waiting for
// their confirmation ([jobtype.ListDraft]), shared by every process using the
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
	PutListDraft(ctx context.Context, p jobtype.PutListDraftParams) (kept bool, err error)
	// ListDraft returns the account's draft id; [jobtype.ErrNotFound] for a
	// missing, expired or taken one, or another account's.
	ListDraft(ctx context.Context, accountID, id string) (jobtype.ListDraft, error)
	// ListDraftChunk returns chunk n of draft id's body, even once the
	// draft is taken; [jobtype.ErrNotFound] when missing or expired.
	ListDraftChunk(ctx context.Context, id string, n int) ([]byte, error)
	// TakeListDraft removes the account's draft id and returns it, in one
	// atomic step: of concurrent takes, one gets it, the others
	// [jobtype.ErrNotFound]. Its chunks stay until DeleteListDraft or their
	// expiry.
	TakeListDraft(ctx context.Context, accountID, id string) (jobtype.ListDraft, error)
	// DeleteListDraft removes draft id, if still there, and its chunks.
	DeleteListDraft(ctx context.Context, id string) error
}
