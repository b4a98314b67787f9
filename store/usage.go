package store

import (
	"context"
	"time"
)

// Usage counts each account's validations by calendar month (UTC) and
// status, for the console's overview and GET /api/v1/account. Counts are
// kept beside the work, not in its transaction: a crash between a
// validation and its count loses the count, never a credit.
type Usage interface {
	// AddUsage adds n validations with the status to the account's month
	// of at.
	AddUsage(ctx context.Context, accountID string, at time.Time, status string, n int) error
	// MonthUsage returns the account's counts by status for the month of
	// at; an account without any has an empty map.
	MonthUsage(ctx context.Context, accountID string, at time.Time) (map[string]int, error)
}

// MonthKey is the month of t as usage stores key it: "2006-01" in UTC.
func MonthKey(t time.Time) string { return t.UTC().Format("2006-01") }
