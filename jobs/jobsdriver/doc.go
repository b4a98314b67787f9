// Package jobsdriver is the contract between the job queue (package jobs)
// and the storage it runs over: what a backend implements
// (store/memstore, store/pgstore, store/redisstore), and nothing a host
// calls.
//
// A backend implements [Driver] and, where it can do more, the optional
// interfaces the queue and its worker pool look for: [ChargingDriver]
// (charge and enqueue in one step), [Notifier] (wake idle workers),
// [BatchCompleter] and [BatchDeferrer] (many jobs in one round trip),
// [StatsDriver] (the queue's depth), [GranularCleanup] (removal by
// partition), [BatchDriver] and [BatchDeleter] (batches), [ListDriver]
// and [ListDraftDriver] (lists and their drafts). Each optional
// interface has a fallback in the queue that keeps the contract, or the
// queue reports that the backend cannot (jobs.ErrNoBatches, …). The
// types a host also sees ([jobtype.Job], [jobtype.Batch], the params of
// the queue's calls, the errors) live in package jobtype; [Lease] and the
// *Params types here belong to the driver alone.
//
// A backend hands its driver to hosts as the Jobs field of its
// store/backend.Backend; a host wraps it with jobs.NewQueue and never
// calls it. The conformance suite jobs/jobstest, run through
// storetest.RunBackend, defines what a correct Driver does; what it does
// not check is not promised.
package jobsdriver
