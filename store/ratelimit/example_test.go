package ratelimit_test

import (
	"context"
	"fmt"

	"github.com/validmail/validmail/store/ratelimit"
)

func ExampleAllowAll() {
	l := ratelimit.NewMemory(nil)
	// One group, the account's: a shared limiter stores both together.
	key := ratelimit.Request{Key: "{7}:key:1", Limit: ratelimit.Limit{PerSecond: 10, Burst: 5}}
	account := ratelimit.Request{Key: "{7}:account", Limit: ratelimit.Limit{PerSecond: 1, Burst: 1}}
	for range 2 {
		ds, err := ratelimit.AllowAll(context.Background(), l, []ratelimit.Request{key, account})
		if err != nil {
			fmt.Println(err)
			return
		}
		// All or none: the refused second request leaves the key's
		// bucket as it was.
		fmt.Println(ds[0].Allowed, ds[0].Remaining, ds[1].Allowed)
	}
	// Output:
	// true 4 true
	// true 4 false
}
