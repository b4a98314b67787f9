// Package memstore keeps every validmail backend in memory: accounts and
// keys ([store.Accounts]), the credits ledger ([credits.Store]) and the job
// queue ([jobs.Driver], [jobs.ChargingDriver], [jobs.Notifier]). It is the
// embedded default, and what tests use.
//
// One [Store] holds all of them behind one mutex, so every multi-part change
// — creating an account with its signup credits, charging and enqueueing a
// batch, completing a job with its refund and outbox event — is atomic.
// Nothing survives the process.
package memstore
