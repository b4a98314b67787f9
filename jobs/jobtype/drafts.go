package jobtype

import "time"

// ListDraft is a list read and checked, waiting in the store for its
// owner's confirmation, so that any instance sharing the store can show
// it, change it, submit it or drop it. Its body (the read list) is kept
// in Chunks numbered from 0, stored apart ([jobsdriver.ListDraftDriver]).
type ListDraft struct {
	// ID names the draft: an unguessable token, at most 128 bytes.
	ID string
	// AccountID owns the draft; required.
	AccountID string
	// Network is the uploader's client network (a ratelimit.ClientKey),
	// for the bound per network; may be empty.
	Network string
	// Meta is the caller's description of the list (its preview,
	// columns, name), opaque to the store; at most [jobs.MaxListDraftMeta].
	Meta []byte
	// Chunks counts the body's chunks.
	Chunks int
	// ExpiresAt ends the draft: after it, it is as if deleted.
	ExpiresAt time.Time
}

// PutListDraftParams describes a draft for [jobsdriver.ListDraftDriver.PutListDraft].
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
