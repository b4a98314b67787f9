package jobs

import "github.com/validmail/validmail/jobs/jobsdriver"

// Deprecated names kept while references move to package jobsdriver.
// Lease is [jobsdriver.Lease].
type Lease = jobsdriver.Lease

// LeaseParams is [jobsdriver.LeaseParams].
type LeaseParams = jobsdriver.LeaseParams

// HeartbeatParams is [jobsdriver.HeartbeatParams].
type HeartbeatParams = jobsdriver.HeartbeatParams

// CompleteParams is [jobsdriver.CompleteParams].
type CompleteParams = jobsdriver.CompleteParams

// RetryParams is [jobsdriver.RetryParams].
type RetryParams = jobsdriver.RetryParams

// RescueParams is [jobsdriver.RescueParams].
type RescueParams = jobsdriver.RescueParams

// CleanupParams is [jobsdriver.CleanupParams].
type CleanupParams = jobsdriver.CleanupParams

// GranularCleanup is [jobsdriver.GranularCleanup].
type GranularCleanup = jobsdriver.GranularCleanup

// Driver is [jobsdriver.Driver].
type Driver = jobsdriver.Driver

// ChargingDriver is [jobsdriver.ChargingDriver].
type ChargingDriver = jobsdriver.ChargingDriver

// BatchCompleter is [jobsdriver.BatchCompleter].
type BatchCompleter = jobsdriver.BatchCompleter

// BatchDeferrer is [jobsdriver.BatchDeferrer].
type BatchDeferrer = jobsdriver.BatchDeferrer

// StatsDriver is [jobsdriver.StatsDriver].
type StatsDriver = jobsdriver.StatsDriver

// Notifier is [jobsdriver.Notifier].
type Notifier = jobsdriver.Notifier

// BatchCompleted is [jobsdriver.BatchCompleted].
var BatchCompleted = jobsdriver.BatchCompleted

// BatchDriver is [jobsdriver.BatchDriver].
type BatchDriver = jobsdriver.BatchDriver

// BatchDeleter is [jobsdriver.BatchDeleter].
type BatchDeleter = jobsdriver.BatchDeleter

// ListDriver is [jobsdriver.ListDriver].
type ListDriver = jobsdriver.ListDriver

// ListDraftDriver is [jobsdriver.ListDraftDriver].
type ListDraftDriver = jobsdriver.ListDraftDriver
