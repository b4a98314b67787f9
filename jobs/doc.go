// Package jobs runs asynchronous validations: a durable [Queue] of one job
// per address, and the worker [Pool] that validates them.
//
// The Queue is the concrete type callers use; it runs over a [Driver], the
// interface a backend implements (store/memstore, store/pgstore,
// store/redisstore). The conformance suite jobs/jobstest defines what a
// correct Driver does.
//
// # Life of a job
//
// Enqueue makes a job available. A worker leases it: the driver hands it out
// with a fresh lease token and an expiry, and the worker renews the lease by
// [Queue.Heartbeat] while it works. The worker then either completes the job
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
