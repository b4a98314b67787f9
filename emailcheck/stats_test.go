package emailcheck_test

import (
	"context"
	"testing"

	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/emailcheck/dnstest"
)

// Stats counts cache hits and misses, evictions, queries by outcome and
// their latencies.
func TestStats(t *testing.T) {
	t.Parallel()
	srv := dnstest.Start(t, dnstest.Zone{
		"good.com":  {MX: []dnstest.MX{{Pref: 10, Host: "mx.good.com"}}},
		"other.com": {MX: []dnstest.MX{{Pref: 10, Host: "mx.other.com"}}},
	}, nil)
	v, err := emailcheck.New(&emailcheck.Config{Nameservers: []string{srv.Addr()}, CacheSize: 1, AllowPrivateMX: true})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	ctx := context.Background()
	for _, e := range []string{"a@good.com", "b@good.com", "c@missing.com", "d@other.com"} {
		if _, err := v.Validate(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	st := v.Stats()
	// good.com: a miss then a hit; missing.com and other.com: misses, each
	// pushing the one cached domain out.
	if st.CacheHits != 1 || st.CacheMisses != 3 || st.CacheEvictions != 2 || st.CacheEntries != 1 || st.LookupsInFlight != 0 {
		t.Fatalf("cache stats %+v", st)
	}
	// A loaded machine may answer later than the first RTO: a query is
	// then sent again and one of the two may count as timed out.
	if _, ok := st.Queries["timeout"]; !ok || st.Queries["answer"] == 0 || st.Queries["nxdomain"] == 0 {
		t.Fatalf("queries %v", st.Queries)
	}
	answered := st.Queries["answer"] + st.Queries["nxdomain"] + st.Queries["rcode"]
	var sum uint64
	for _, n := range st.QueryLatency.Counts {
		sum += n
	}
	if st.QueryLatency.Count != answered || sum != answered || st.QueryLatency.Sum <= 0 || len(st.QueryLatency.Counts) != len(st.QueryLatency.Bounds)+1 {
		t.Fatalf("latency %+v for %d answers", st.QueryLatency, answered)
	}
	if int64(answered) > srv.Queries() || answered < 7 {
		t.Fatalf("%d answered exchanges counted, the server answered %d; want at least 7", answered, srv.Queries())
	}
}
