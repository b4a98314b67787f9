package ratelimit_test

import (
	"math"
	"testing"
	"time"

	"github.com/validmail/validmail/httpapi/ratelimit"
	"github.com/validmail/validmail/httpapi/ratelimit/ratelimittest"
)

func TestMemoryMulti(t *testing.T) {
	ratelimittest.RunMulti(t, func(*testing.T) ratelimit.MultiLimiter { return ratelimit.NewMemory(nil) })
}

func TestLimitCheckAndInterval(t *testing.T) {
	for _, tc := range []struct {
		l        ratelimit.Limit
		ok       bool
		interval time.Duration
	}{
		{ratelimit.Limit{PerSecond: -1}, true, 0},
		{ratelimit.Limit{PerSecond: 100, Burst: 1}, true, 10 * time.Millisecond},
		{ratelimit.Limit{PerSecond: 3, Burst: 5}, true, 333333 * time.Microsecond},
		{ratelimit.Limit{PerSecond: 1e9, Burst: 5}, true, time.Microsecond},
		{ratelimit.Limit{PerSecond: 0, Burst: 5}, false, 0},
		{ratelimit.Limit{PerSecond: 1, Burst: 0}, false, 0},
		{ratelimit.Limit{PerSecond: math.NaN(), Burst: 1}, false, 0},
		{ratelimit.Limit{PerSecond: math.Inf(1), Burst: 1}, false, 0},
	} {
		err := tc.l.Check()
		if (err == nil) != tc.ok {
			t.Errorf("%+v: Check() = %v", tc.l, err)
		}
		if tc.ok && !tc.l.Unlimited() && tc.l.Interval() != tc.interval {
			t.Errorf("%+v: Interval() = %v, want %v", tc.l, tc.l.Interval(), tc.interval)
		}
	}
}
