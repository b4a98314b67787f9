// Package jobs runs asynchronous validations: a durable [Queue] of one job
// per address, and the worker [Pool] that validates them.
//
// # For users
//
// Most hosts never touch this package: httpapi/service builds the queue and
// the pool from a store.Backend. A host that wires them itself calls
// [NewQueue] over the backend's Jobs, then [Queue.EnqueueCharged] (or
// [Queue.Enqueue]) to submit a batch and [Queue.Get] to read a job, and
// runs a [NewPool] with [Pool.Run] to work the queue.
//
// # For backend authors
//
// The Queue runs over a [Driver], the interface a backend implements
// (store/memstore, store/pgstore, store/redisstore), optionally with
// [ChargingDriver] and [Notifier]; the *Params types, [Lease] and [Event]
// belong to that contract. The conformance suite jobs/jobstest, run through
// storetest.RunBackend, defines what a correct Driver does.
//
// # Life of a job
//
// Enqueue makes a job available. A worker leases it: the driver hands it out
// with a fresh lease token and an expiry, and the worker renews the lease by
// [Driver.Heartbeat] while it works. The worker then either completes the job
// with its result, or retries it later (the failure counts towards the
// attempt limit). A lease that expires (its worker died) is rescued by
// [Queue.RescueExpired]: the job becomes available again and the failure is
// counted. Every change after leasing is a compare-and-set on the job's
// state and lease token, so a completed job is never re-run and a worker
// that lost its lease cannot overwrite another's work ([ErrLeaseLost]).
//
// A job never ends without a result: when its attempts run out the Pool
// completes it with an UNKNOWN result ([UnknownResult]) and refunds its
// credit. Completing, refunding and recording the completion's outbox
// [Event] are one atomic step in the driver.
//
// Users see two states: [StateActive] from acceptance until done, then
// [StateCompleted]. Completed jobs are kept for the retention
// ([Config.Retention], 7 days by default) and then removed by
// [Queue.Cleanup]; [Queue.Get] looks a job up within one account only.
//
// # Identifiers
//
// Job ids are numeric text ("1", "2", …), unique in the deployment and
// increasing in enqueue order. Compare them as numbers, not as strings.
package jobs
