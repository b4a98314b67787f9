// Package memstore keeps every validmail backend in memory: accounts and
// keys ([store.Accounts]), the credits ledger ([credits.Store]), the job
// queue ([jobsdriver.Driver], [jobsdriver.ChargingDriver], [jobsdriver.Notifier]) and, on
// [Webhooks], the webhook outbox and endpoints ([webhook.Outbox],
// [webhook.Endpoints]). [NewBackend] returns them all as one
// [backend.Backend]. It is the embedded default, and what tests use.
//
// One [Store] holds all of them behind one mutex, so every multi-part change
// — creating an account with its signup credits, charging and enqueueing a
// batch, completing a job with its refund and its webhook event — is
// atomic: the event a completion records is a pending delivery from that
// instant. Nothing survives the process.
//
// List drafts ([jobsdriver.ListDraftDriver]) are kept under the same lock:
// [Store.PutListDraft] drops the account's other draft and its network's
// oldest in one step, and [Store.TakeListDraft] removes a draft once.
//
// [Store.DeleteBatch] ([jobsdriver.BatchDeleter]) removes a batch, its jobs and
// its list's rows under the same lock.
//
// Multi-part changes check everything before their first write, under the
// lock (checkLocked for credits, heldLocked for leases: the compare-and-set
// on a job's state and lease token), so a refused change writes nothing;
// see [Store.EnqueueCharged] and [Store.Complete].
package memstore
