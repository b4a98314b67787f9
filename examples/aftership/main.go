// Command aftership times validmail's emailcheck beside AfterShip's
// email-verifier on the same uncached domains, in the same run, against a
// loopback nameserver (emailcheck/dnstest) that answers after a fixed
// latency: each round validates -n addresses at as many new domains, one
// goroutine each, first with one, then with the other (alternating which
// goes first). It is a module of its own, so that the library never
// depends on the verifier it is compared with.
//
//	go run . -n 1000 -latency 20ms -rounds 5
//	go run . -readbuf 4096        # a resolver with a 4 KiB receive buffer
//	go run . -additional          # MX answers carry their hosts' addresses
//	go run . -warm                # one validator for all rounds, as a service keeps
//
// emailcheck asks for each domain's MX records and then for its MX hosts'
// addresses (two round trips, the hosts cached across domains);
// email-verifier asks for the MX records only (net.LookupMX through Go's
// resolver, pointed here at the same server). With -additional the server
// puts the hosts' addresses in the MX answers' additional section, and
// emailcheck takes them from there instead of asking.
package main

import (
	"context"
	"flag"
	"fmt"
	"hash/crc32"
	"net"
	"os"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	emailverifier "github.com/AfterShip/email-verifier"

	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/emailcheck/dnstest"
)

func main() {
	n := flag.Int("n", 1000, "addresses a round, each at a domain of its own")
	latency := flag.Duration("latency", 20*time.Millisecond, "the nameserver's delay before each answer")
	rounds := flag.Int("rounds", 5, "rounds, each on new domains")
	readBuf := flag.Int("readbuf", 0, "the nameserver's UDP receive buffer in bytes (0: 4 MiB)")
	pending := flag.Int("pending", 0, "the most queries the nameserver holds at once (0: no bound)")
	warm := flag.Bool("warm", false, "keep one validator across rounds, as a service does, so that its\nnameserver windows carry what earlier rounds learnt (default: a new validator each round)")
	additional := flag.Bool("additional", false, "MX answers carry their hosts' addresses in the additional section, as BIND's\nresolver sends them from its cache (default: the question only, as most public resolvers)")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the whole run to this `file`")
	flag.Parse()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "aftership:", err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	if err := run(*n, *latency, *rounds, *readBuf, *pending, *additional, *warm); err != nil {
		pprof.StopCPUProfile()
		fmt.Fprintln(os.Stderr, "aftership:", err)
		os.Exit(1)
	}
}

func run(n int, latency time.Duration, rounds, readBuf, pending int, additional, warm bool) error {
	srv, err := dnstest.NewServer(nil, &dnstest.Options{
		Latency: latency, ReadBuffer: readBuf, MaxPending: pending, Additional: additional,
		Fallback: func(name string) (dnstest.Domain, bool) {
			if !strings.HasSuffix(name, ".cmp") || strings.HasPrefix(name, "mx.") {
				return dnstest.Domain{}, false // hosts answer for themselves
			}
			// Most domains at one of a few providers' hosts, one in five
			// at a host of its own, as in emailcheck's benchmarks.
			spread := crc32.ChecksumIEEE([]byte(name))
			host := fmt.Sprintf("mx%d.provider.net", spread%8)
			if spread%5 == 0 {
				host = "mx." + name
			}
			return dnstest.Domain{MX: []dnstest.MX{{Pref: 10, Host: host}}}, true
		},
	})
	if err != nil {
		return err
	}
	defer srv.Close()
	// email-verifier resolves through Go's default resolver.
	net.DefaultResolver = &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, srv.Addr())
	}}
	verifier := emailverifier.NewVerifier()

	var ours, theirs []time.Duration
	var kept *emailcheck.Validator // the validator kept across rounds (-warm)
	defer func() {
		if kept != nil {
			kept.Close()
		}
	}()
	for round := range rounds {
		emails := func(tag string) []string {
			out := make([]string, n)
			for i := range out {
				out[i] = fmt.Sprintf("user%d@%s%d-%d.cmp", i, tag, round, i)
			}
			return out
		}
		runOurs := func() error {
			v := kept
			if v == nil {
				var err error
				if v, err = emailcheck.New(&emailcheck.Config{Nameservers: []string{srv.Addr()}, AllowPrivateMX: true}); err != nil {
					return err
				}
				if warm {
					kept = v
				} else {
					defer v.Close()
				}
			}
			var unknown atomic.Int64
			before := srv.Queries()
			took := parallel(emails("v"), func(e string) {
				if res, err := v.Validate(context.Background(), e); err != nil || res.Confidence.Status != emailcheck.StatusLikely {
					unknown.Add(1)
				}
			})
			ours = append(ours, took)
			fmt.Printf("round %d  validmail      %8.1f ms  %d not LIKELY, %d queries\n", round+1, ms(took), unknown.Load(), srv.Queries()-before)
			return nil
		}
		runTheirs := func() {
			var failed atomic.Int64
			before := srv.Queries()
			took := parallel(emails("a"), func(e string) {
				if res, err := verifier.Verify(e); err != nil || !res.HasMxRecords {
					failed.Add(1)
				}
			})
			theirs = append(theirs, took)
			fmt.Printf("round %d  email-verifier %8.1f ms  %d without MX, %d queries\n", round+1, ms(took), failed.Load(), srv.Queries()-before)
		}
		if round%2 == 0 {
			if err := runOurs(); err != nil {
				return err
			}
			runTheirs()
		} else {
			runTheirs()
			if err := runOurs(); err != nil {
				return err
			}
		}
	}
	mo, mt := median(ours), median(theirs)
	fmt.Printf("median   validmail %.1f ms, email-verifier %.1f ms: %.2fx; queries dropped by the server %d\n", ms(mo), ms(mt), float64(mo)/float64(mt), srv.Dropped())
	return nil
}

// parallel calls f for every address at once and returns how long they
// all took.
func parallel(emails []string, f func(string)) time.Duration {
	start := time.Now()
	var wg sync.WaitGroup
	for _, e := range emails {
		wg.Go(func() { f(e) })
	}
	wg.Wait()
	return time.Since(start)
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
