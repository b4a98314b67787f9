package ratelimit_test

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/validmail/validmail/store/ratelimit"
	"github.com/validmail/validmail/store/ratelimit/ratelimittest"
)

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

func TestMemory(t *testing.T) {
	ratelimittest.Run(t, ratelimittest.Harness{New: func(*testing.T) (ratelimit.Limiter, ratelimit.Limiter) {
		l := ratelimit.NewMemory(nil)
		return l, l
	}})
}

func TestClientKey(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"192.0.2.7", "192.0.2.0/24"},
		{" 192.0.2.7 ", "192.0.2.0/24"},
		{"::ffff:192.0.2.7", "192.0.2.0/24"},
		{"2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"},
		{"2001:db8:1:2::ffff", "2001:db8:1:2::/64"},
		{"[2001:db8:1:2::1]", "2001:db8:1:2::/64"},
		{"fe80::1%eth0", "fe80::/64"},
		{"2001:db8:1:3::1", "2001:db8:1:3::/64"},
		{"::1", "::/64"},
		{"192.0.2.7:5555", "192.0.2.0/24"},
		{"192.0.2.7:1", "192.0.2.0/24"},
		{" 192.0.2.7:65535 ", "192.0.2.0/24"},
		{"[2001:db8:1:2::1]:443", "2001:db8:1:2::/64"},
		{"[2001:db8:1:2:3:4:5:6]:8080", "2001:db8:1:2::/64"},
		{"[fe80::1%eth0]:80", "fe80::/64"},
		{"[::ffff:192.0.2.7]:5555", "192.0.2.0/24"},
		{"2001:db8:1:2::80", "2001:db8:1:2::/64"}, // no port: an address
		{"192.0.2.255", "192.0.2.0/24"},
		{"192.0.3.1", "192.0.3.0/24"}, // the next /24: another client
		{"10.1.2.3", "10.1.2.0/24"},
		{"192.0.2.7:99999", "192.0.2.7:99999"}, // not a port: kept as given
		{"", ""},
		{"unknown", "unknown"},
		{strings.Repeat("x", 100), strings.Repeat("x", 64)},
	} {
		if got := ratelimit.ClientKey(tc.in); got != tc.want {
			t.Errorf("ClientKey(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestSubscriberKey(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"192.0.2.7", "192.0.2.7/32"},
		{"192.0.2.8:5555", "192.0.2.8/32"},
		{"::ffff:192.0.2.7", "192.0.2.7/32"},
		{"2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"},
		{"[2001:db8:1:2::1]:443", "2001:db8:1:2::/64"},
		{"", ""},
		{"unknown", "unknown"},
	} {
		if got := ratelimit.SubscriberKey(tc.in); got != tc.want {
			t.Errorf("SubscriberKey(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func FuzzClientKey(f *testing.F) {
	for _, s := range []string{"192.0.2.7", "2001:db8::1", "[::1]", "fe80::1%zone", "::ffff:1.2.3.4", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		k := ratelimit.ClientKey(s)
		if len(k) > 64 {
			t.Fatalf("ClientKey(%q) = %q: longer than 64 bytes", s, k)
		}
		if (k == "") != (s == "") {
			t.Fatalf("ClientKey(%q) = %q", s, k)
		}
	})
}

// The memory limiter forgets buckets full again and counters of ended
// windows, so keys that stop coming cost nothing.
func TestMemorySweeps(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	clock := func() time.Time { return now }
	l := ratelimit.NewMemory(clock)
	ctx := context.Background()
	limit := ratelimit.Limit{PerSecond: 1, Burst: 2}
	q := ratelimit.Quota{Limit: 5, Window: time.Minute}
	for i := range 1000 {
		if d, err := l.Allow(ctx, fmt.Sprint("ip-", i), limit); err != nil || !d.Allowed {
			t.Fatal(d, err)
		}
		if d, err := l.Take(ctx, fmt.Sprint("acct-", i), 5, q); err != nil || !d.Allowed {
			t.Fatal(d, err)
		}
	}
	if got := l.Len(); got != 2000 {
		t.Fatalf("%d buckets and counters, want 2000", got)
	}
	now = now.Add(2 * time.Minute)
	if d, err := l.Allow(ctx, "ip-1", limit); err != nil || !d.Allowed || d.Remaining != 1 {
		t.Fatalf("a swept key: %+v, %v; want a full bucket", d, err)
	}
	if d, err := l.Take(ctx, "acct-1", 5, q); err != nil || !d.Allowed {
		t.Fatalf("a swept counter: %+v, %v", d, err)
	}
	if got := l.Len(); got != 2 {
		t.Fatalf("%d buckets and counters after the sweep, want the 2 just used", got)
	}
}

// Group is what a Redis Cluster hashes: the first non-empty braces, or
// the whole key.
func TestGroup(t *testing.T) {
	for key, want := range map[string]string{
		"authfail:1.2.3.4": "authfail:1.2.3.4",
		"{acct}:key:k1":    "acct",
		"read:{acct}:acct": "acct",
		"a{b}c{d}":         "b",
		"a{}b{c}":          "a{}b{c}",
		"a{b":              "a{b",
		"a}b{c}":           "c",
		"":                 "",
	} {
		if got := ratelimit.Group(key); got != want {
			t.Errorf("Group(%q) = %q, want %q", key, got, want)
		}
	}
}
