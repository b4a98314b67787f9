// Package jobs runs asynchronous validations: a durable [Queue] of one job
// per address, and the worker [Pool] that validates them.
//
// # What a host calls
//
// Most hosts never touch this package: httpapi/service builds the queue and
// the pool from a store/backend.Backend. A host that wires them itself calls
// [NewQueue] over the backend's Jobs, then [Queue.EnqueueCharged] (or
// [Queue.Enqueue]) to submit a batch, [Queue.Get], [Queue.Batch] and
// [Queue.List] to read, [Queue.BeginList] and [Queue.ListDrafts] for
// lists, [Queue.Stats] for an operator's metrics, and runs a [NewPool] with
// [Pool.Run] to work the queue. Everything a host calls is here; the types
// it shares with the storage ([Job], [Batch], [ListInfo], the params and
// errors) are declared in package jobs/jobtype and named here too, as
// package os names io/fs's.
//
// # What a backend implements
//
// The Queue runs over a [jobsdriver.Driver], the contract of package
// jobs/jobsdriver, with its optional interfaces, its [jobsdriver.Lease] and
// the params of the calls only the Queue and its Pool make. A backend
// (store/memstore, store/pgstore, store/redisstore) implements it, hands
// it to hosts as its Backend's Jobs, and imports jobsdriver and jobtype,
// not this package. The conformance suite jobs/jobstest, run through
// storetest.RunBackend, defines what a correct driver does.
//
// # Life of a job
//
// Enqueue makes a job available. A worker leases it: the driver hands it out
// with a fresh lease token and an expiry, and the worker renews the lease by
// [jobsdriver.Driver.Heartbeat] while it works. The worker then either completes the job
// with its result, or retries it later (the failure counts towards the
// attempt limit). A lease that expires (its worker died) is rescued by
// [Queue.RescueExpired]: the job becomes available again and the failure is
// counted. Every change after leasing is a compare-and-set on the job's
// state and lease token, so a completed job is never re-run and a worker
// that lost its lease cannot overwrite another's work ([ErrLeaseLost]).
//
// A job never ends without a result: when its attempts run out the Pool
// completes it with the validator's UNKNOWN result for the address, the
// one a single validation gives when the DNS gives no verdict
// ([UnknownValidator]; [UnknownResult] from a validator that cannot tell
// it), and refunds its credit. Completing, refunding and recording the completion's outbox
// events ([jobsdriver.CompleteParams.Event], and [jobsdriver.CompleteParams.BatchEvent] for a
// batch's last job, with the batch's final counts) are one atomic step in
// the driver.
//
// # When the DNS does not answer
//
// Whether the DNS is down is asked of a [Canary] (a question whose answer
// is known), never inferred from the jobs: an address at a domain that
// never answers says nothing about the others. When a validation comes
// back UNKNOWN the Pool asks the canary afresh. If it answers, a job whose
// own domain went unanswered, or whose nameservers answered with a
// failure (SERVFAIL), is tried again later, out of the others' way
// ([PoolConfig.UnknownAttempts], [DefaultUnknownBackoff]: three attempts
// over about a minute), then completes with the validator's own UNKNOWN
// result, the same a single validation gives, refunded. If it does not,
// the job goes back to the queue without counting an attempt and the Pool
// leases nothing until the canary answers again; the jobs of the outage,
// those in flight when it began included, then complete with their true
// verdicts. Likewise, while the store takes leases but fails to write
// their outcomes, the Pool leases only now and again (the poll interval,
// doubled for each failed write in a row, up to 5 s) rather than validate
// the whole backlog for nothing. A validation that takes long (a domain
// answering slowly or never) goes aside after [PoolConfig.SlowAfter] and
// frees its worker (the writes of its outcome do not count), and the next
// jobs of its account or domain go aside at once (or, when the slow lane
// is full, wait in the queue a moment), so that no batch waits behind
// another's dead domains.
//
// # Sharing the workers between accounts
//
// A queue serves many accounts at once, and none waits for another's
// work: the driver hands jobs out in a fair order ([jobsdriver.Driver]'s Lease),
// accounts with jobs ready taking turns one job each, so that a quiet
// account's batch is leased within a few jobs of its arrival, whatever
// another account has queued (a list of a million rows included); an
// account's own jobs come in the order it enqueued them. Turns are
// counted in jobs and charged for worker time: a job that fails, or that
// the Pool defers because its account's jobs already hang on slow
// answers (the slow lane, [PoolConfig.SlowAfter]), takes a new turn
// behind its account's other jobs, so that dead domains, of one account
// or of several, cost their own accounts' turns. An account joins at the
// queue's position, which never goes back, so no account saves up turns
// while idle. A single account alone drains as fast as before. The
// conformance suite jobs/jobstest holds every driver to this order.
//
// Users see two states: [StateActive] from acceptance until done, then
// [StateCompleted]. Completed jobs are kept for the retention
// ([Config.Retention], 7 days by default) and then removed by
// [Queue.Cleanup]; [Queue.Get] looks a job up within one account only.
//
// # Identifiers
//
// Job ids are numeric text ("1", "2", …), unique in the deployment and
// increasing in enqueue order within one account; across accounts a
// driver may number them otherwise (the Redis driver's ids carry the
// account's shard in their high bits, so a later job of another account
// may have a smaller id). Compare them as numbers, not as strings.
package jobs
