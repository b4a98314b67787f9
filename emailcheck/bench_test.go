package emailcheck_test

import (
	"context"
	"fmt"
	"hash/crc32"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/emailcheck/dnstest"
)

// generatedZone answers every name "dN.bench" (any N) with an MX record, so
// a test can use as many distinct domains as it likes.
func generatedZone() *dnstest.Options {
	return &dnstest.Options{Fallback: func(name string) (dnstest.Domain, bool) {
		if !strings.HasSuffix(name, ".bench") && !strings.HasSuffix(name, ".bench.") {
			return dnstest.Domain{}, false
		}
		// Hosts are shared the way providers share them: most domains
		// point at one of a few providers' hosts, one in five runs a host
		// of its own.
		name = strings.TrimSuffix(name, ".")
		spread := crc32.ChecksumIEEE([]byte(name))
		host := fmt.Sprintf("mx%d.provider.net", spread%8)
		if spread%5 == 0 {
			host = "mx." + name
		}
		return dnstest.Domain{MX: []dnstest.MX{{Pref: 10, Host: host}, {Pref: 20, Host: "mx2.provider.net"}}}, true
	}}
}

func BenchmarkValidateCached(b *testing.B) {
	bb := setup(b, emailcheck.Config{})
	ctx := context.Background()
	if _, err := bb.v.Validate(ctx, "john.doe@good.com"); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := bb.v.Validate(ctx, "john.doe@good.com"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkValidateCachedParallel(b *testing.B) {
	bb := setup(b, emailcheck.Config{})
	ctx := context.Background()
	if _, err := bb.v.Validate(ctx, "john.doe@good.com"); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := bb.v.Validate(ctx, "john.doe@good.com"); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// Shape of the nameserver in the 1,000-domain benchmarks: a modest,
// busy resolver. It works on at most benchPending queries at once and
// drops those that arrive beyond (as Unbound drops queries beyond
// num-queries-per-thread), and its socket's receive buffer is small, so
// that the kernel drops datagrams it cannot read in time.
const (
	benchLatency    = 20 * time.Millisecond
	benchPending    = 256
	benchReadBuffer = 64 << 10
)

// benchServer starts the benchmarks' nameserver over the generated zone.
func benchServer(b *testing.B, additional bool) *dnstest.Server {
	opts := generatedZone()
	opts.Additional = additional
	opts.MaxPending = benchPending
	opts.ReadBuffer = benchReadBuffer
	srv := dnstest.Start(b, nil, opts)
	srv.SetLatency(benchLatency)
	return srv
}

// BenchmarkValidate1000Domains validates 1,000 addresses on 1,000 distinct,
// uncached domains against a nameserver that takes 20 ms to answer and
// has a finite queue (benchPending, benchReadBuffer), with the default
// settings and a new Validator each time: one op is the whole list, from
// cold. The MX hosts' addresses come either in the MX answers' additional
// section (as from an authoritative server, or a resolver that adds them)
// or from queries of their own (as from most public resolvers): one more
// round trip for each host not cached yet. Each reports "unknown/op", the
// addresses that ended UNKNOWN (there must be none), and "dropped/op",
// the queries the server dropped. NetLookupMX is the yardstick, in the
// same run and against the same kind of server: the standard library's
// resolver looking up the same domains' MX records, one goroutine each,
// which is what AfterShip's email-verifier does for an address
// (net.LookupMX), without its other checks; it reports "failed/op".
func BenchmarkValidate1000Domains(b *testing.B) {
	for _, additional := range []bool{true, false} {
		name := "QuestionOnly"
		if additional {
			name = "Additional"
		}
		b.Run(name, func(b *testing.B) {
			bench1000Domains(b, benchServer(b, additional))
		})
	}
	b.Run("NetLookupMX", func(b *testing.B) {
		srv := benchServer(b, false)
		r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, srv.Addr())
		}}
		round := 0
		var failed atomic.Int64
		for b.Loop() {
			round++
			var wg sync.WaitGroup
			for i := range 1000 {
				wg.Go(func() {
					if mx, err := r.LookupMX(context.Background(), fmt.Sprintf("d%d-%d.bench.", round, i)); err != nil || len(mx) == 0 {
						failed.Add(1)
					}
				})
			}
			wg.Wait()
		}
		b.ReportMetric(float64(failed.Load())/float64(b.N), "failed/op")
		b.ReportMetric(float64(srv.Dropped())/float64(b.N), "dropped/op")
	})
}

func bench1000Domains(b *testing.B, srv *dnstest.Server) {
	emails := make([]string, 1000)
	round := 0
	unknown := 0
	for b.Loop() {
		b.StopTimer()
		round++
		for i := range emails {
			emails[i] = fmt.Sprintf("user@d%d-%d.bench", round, i)
		}
		v, err := emailcheck.New(&emailcheck.Config{Nameservers: []string{srv.Addr()}})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		n := 0
		for res, err := range v.ValidateMany(context.Background(), sliceSeq(emails), nil) {
			if err != nil {
				b.Fatal(err)
			}
			switch res.Confidence.Status {
			case emailcheck.StatusLikely:
			case emailcheck.StatusUnknown:
				unknown++
			default:
				b.Fatalf("%s: %s", res.Email, res.Confidence.Status)
			}
			n++
		}
		b.StopTimer()
		v.Close()
		if n != len(emails) {
			b.Fatalf("%d results", n)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(unknown)/float64(b.N), "unknown/op")
	b.ReportMetric(float64(srv.Dropped())/float64(b.N), "dropped/op")
}

func sliceSeq(s []string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for _, e := range s {
			if !yield(e) {
				return
			}
		}
	}
}

// BenchmarkCacheHeap reports the heap that cached domains hold, scaled to
// 100,000 domains.
func BenchmarkCacheHeap(b *testing.B) {
	for b.Loop() {
		perDomain := cachedBytesPerDomain(b, 20_000)
		b.ReportMetric(perDomain*100_000/(1<<20), "MiB/100k-domains")
	}
}

// TestCacheHeapBudget checks that 100,000 cached domains fit in 64 MiB of
// heap, measured on a sample of real lookups.
func TestCacheHeapBudget(t *testing.T) {
	n := 20_000
	if testing.Short() {
		n = 2_000
	}
	perDomain := cachedBytesPerDomain(t, n)
	total := perDomain * 100_000 / (1 << 20)
	t.Logf("cache: %.0f bytes per domain, %.1f MiB per 100,000 domains", perDomain, total)
	if total > 64 {
		t.Errorf("100,000 cached domains would hold %.1f MiB; budget 64 MiB", total)
	}
}

// cachedBytesPerDomain returns the heap a Validator retains per cached
// domain: the heap it holds after n lookups of distinct domains less the
// heap it holds after one, each measured as the heap with the Validator
// minus the heap once it is released (the DNS server's own state stays
// out of both).
func cachedBytesPerDomain(tb testing.TB, n int) float64 {
	tb.Helper()
	srv := dnstest.Start(tb, nil, generatedZone())
	one := retainedHeap(tb, srv, "one", 1)
	all := retainedHeap(tb, srv, "all", n)
	return float64(all-one) / float64(n-1)
}

// retainedHeap resolves n distinct domains through a fresh Validator and
// returns the heap the Validator retains.
func retainedHeap(tb testing.TB, srv *dnstest.Server, tag string, n int) int64 {
	v, err := emailcheck.New(&emailcheck.Config{Nameservers: []string{srv.Addr()}, CacheSize: n})
	if err != nil {
		tb.Fatal(err)
	}
	emails := make([]string, n)
	for i := range emails {
		emails[i] = fmt.Sprintf("u@heap-%s%d.bench", tag, i)
	}
	for res, err := range v.ValidateMany(context.Background(), sliceSeq(emails), nil) {
		if err != nil || res.Confidence.Status != emailcheck.StatusLikely {
			tb.Fatalf("%s: %s %v", res.Email, res.Confidence.Status, err)
		}
	}
	emails = nil
	// Two collections empty sync.Pool caches (the DNS server's buffers),
	// which would otherwise be counted.
	var filled, released runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&filled)
	v.Close()
	v = nil
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&released)
	return int64(filled.HeapAlloc) - int64(released.HeapAlloc)
}
