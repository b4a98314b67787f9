// Package memstore keeps every validmail backend in memory: accounts and
// keys ([store.Accounts]) and the credits ledger ([credits.Store]) on
// [Store], the job queue's driver ([jobsdriver.Driver],
// [jobsdriver.ChargingDriver], [jobsdriver.Notifier], …) over the same
// Store, and, on [Webhooks], the webhook outbox and endpoints
// ([webhook.Outbox], [webhook.Endpoints]). [NewBackend] returns them all
// as one [backend.Backend], the driver as its Jobs: a host reaches the
// queue through jobs.NewQueue over it, never on the Store. It is the embedded default, and what tests use.
//
// One [Store] holds all of them behind one mutex, so every multi-part change
// — creating an account with its signup credits, charging and enqueueing a
// batch, completing a job with its refund and its webhook event — is
// atomic: the event a completion records is a pending delivery from that
// instant. Nothing survives the process.
//
// List drafts ([jobsdriver.ListDraftDriver]) are kept under the same lock:
// PutListDraft drops the account's other draft and its network's
// oldest in one step, and TakeListDraft removes a draft once.
//
// DeleteBatch ([jobsdriver.BatchDeleter]) removes a batch, its jobs and
// its list's rows under the same lock.
//
// Multi-part changes check everything before their first write, under the
// lock (checkLocked for credits, heldLocked for leases: the compare-and-set
// on a job's state and lease token), so a refused change writes nothing;
// see EnqueueCharged and Complete.
package memstore
