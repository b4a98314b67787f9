// Package jobtype holds the types a host of the job queue and a backend's
// driver both speak: a [Job] and its [State], a [Batch], a list's rows and
// description, the parameters of the calls a host makes through
// jobs.Queue and a driver serves, and the errors both report
// ([ErrNotFound], [ErrLeaseLost], …).
//
// It imports nothing of the queue, so that the queue (package jobs) and
// the driver contract (package jobs/jobsdriver) can both use it without a
// cycle. Hosts need not import it: package jobs names each of its types
// (jobs.Job is jobtype.Job), as package os names io/fs's. Backends import
// it with jobsdriver, and not jobs.
package jobtype
