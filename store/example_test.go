package store_test

import (
	"context"
	"fmt"
	"time"

	"github.com/validmail/validmail/store"
	"github.com/validmail/validmail/store/memstore"
)

func ExampleUsageBuffer() {
	ctx := context.Background()
	backend := memstore.New()
	usage := store.NewUsageBuffer(backend)
	// A request path counts in memory; a service runs
	// usage.Run(ctx, time.Second, nil) to write the counts each second.
	now := time.Now()
	for range 3 {
		_ = usage.AddUsage(ctx, "acct-1", now, "LIKELY", 1)
	}
	stored, _ := backend.MonthUsage(ctx, "acct-1", now)
	seen, _ := usage.MonthUsage(ctx, "acct-1", now)
	fmt.Println(stored["LIKELY"], seen["LIKELY"])
	if err := usage.Flush(ctx); err != nil {
		fmt.Println(err)
	}
	stored, _ = backend.MonthUsage(ctx, "acct-1", now)
	fmt.Println(stored["LIKELY"])
	// Output:
	// 0 3
	// 3
}
