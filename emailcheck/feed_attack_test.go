package emailcheck_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/idna"

	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/emailcheck/dnstest"
)

// feedServer serves a disposable list on loopback in the way its handler
// says, so that one feed can meet a friendly server and then a hostile
// one at the same URL.
type feedServer struct {
	handler atomic.Pointer[http.HandlerFunc]
	web     *httptest.Server
}

func startFeedServer(t *testing.T) *feedServer {
	t.Helper()
	s := &feedServer{}
	s.web = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		(*s.handler.Load())(w, r)
	}))
	t.Cleanup(s.web.Close)
	return s
}

func (s *feedServer) serve(h http.HandlerFunc) { s.handler.Store(&h) }

func (s *feedServer) serveList(body string) {
	s.serve(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(body)) })
}

// reloadWithin runs feed.Reload and fails the test unless it returns
// within a generous deadline.
func reloadWithin(t *testing.T, feed *emailcheck.DisposableFeed) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- feed.Reload(context.Background()) }()
	select {
	case err := <-done:
		return err
	case <-time.After(60 * time.Second):
		t.Fatalf("Reload still running after 60s; stats %+v", feed.Stats())
		return nil
	}
}

// A list server turned hostile cannot make a reload take more than the
// configured bytes or time, nor make it read anything but http(s): each
// attack fails that one reload, and the list in use stays.
func TestDisposableFeedHostileServer(t *testing.T) {
	t.Parallel()
	const maxBytes = 4 << 10
	srv := startFeedServer(t)
	srv.serveList("burner-kept.net\nburner-kept.org\n")
	feed, err := emailcheck.NewDisposableFeed(srv.web.URL+"/list.txt", &emailcheck.FeedConfig{
		MaxBytes: maxBytes,
		Timeout:  time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := reloadWithin(t, feed); err != nil {
		t.Fatal(err)
	}
	target := startFeedServer(t) // another loopback server, to redirect to
	target.serveList("redirected-burner.net\nredirected-burner.org\nredirected-burner.com\n")

	line := []byte("an-endless-list-of-burners.com\n")
	var bomb bytes.Buffer
	zw := gzip.NewWriter(&bomb)
	block := bytes.Repeat(line, (1<<20)/len(line))
	for range 16 { // 16 MiB once inflated, 16 KiB on the wire
		_, _ = zw.Write(block)
	}
	_ = zw.Close()

	for _, tt := range []struct {
		name    string
		handler http.HandlerFunc
		refused bool // ErrFeedRefused, rather than a read error
	}{
		{"trickle forever", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			for i := 0; ; i++ {
				if _, err := fmt.Fprintf(w, "t%d.com\n", i); err != nil {
					return
				}
				w.(http.Flusher).Flush()
				select {
				case <-r.Context().Done():
					return
				case <-time.After(20 * time.Millisecond):
				}
			}
		}, false},
		{"headers never end", func(w http.ResponseWriter, r *http.Request) {
			<-r.Context().Done()
		}, false},
		{"gzip bomb", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Encoding", "gzip")
			_, _ = w.Write(bomb.Bytes())
		}, true},
		{"huge Content-Length", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", "1099511627776")
			for range 2 * maxBytes / len(line) {
				if _, err := w.Write(line); err != nil {
					return
				}
			}
		}, true},
		{"endless chunked body", func(w http.ResponseWriter, r *http.Request) {
			for {
				if _, err := w.Write(line); err != nil {
					return
				}
				w.(http.Flusher).Flush()
			}
		}, true},
		{"redirect to a file", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "file:///etc/hostname", http.StatusFound)
		}, false},
		{"redirect loop", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, r.URL.Path, http.StatusFound)
		}, false},
		{"not found", func(w http.ResponseWriter, r *http.Request) {
			http.NotFound(w, r)
		}, false},
	} {
		srv.serve(tt.handler)
		start := time.Now()
		err := reloadWithin(t, feed)
		switch {
		case err == nil:
			t.Errorf("%s: Reload took the list", tt.name)
		case errors.Is(err, emailcheck.ErrFeedRefused) != tt.refused:
			t.Errorf("%s: Reload = %v, refused %v", tt.name, err, !tt.refused)
		}
		if st := feed.Stats(); st.Domains != 2 || st.Loads != 1 {
			t.Errorf("%s: the list in use was not kept: %+v", tt.name, st)
		}
		t.Logf("%s: %v after %v", tt.name, err, time.Since(start).Round(time.Millisecond))
	}
	if st := feed.Stats(); st.Refused != 3 || st.Failures != 5 {
		t.Errorf("3 lists refused and 5 failures expected: %+v", feed.Stats())
	}

	// A redirect to another http(s) address is followed, as the client's
	// own policy has it: the operator chose the source, and a list only
	// ever adds burners.
	srv.serve(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.web.URL+"/moved.txt", http.StatusMovedPermanently)
	})
	if err := reloadWithin(t, feed); err != nil {
		t.Errorf("redirect to another server: %v", err)
	}
	if st := feed.Stats(); st.Domains != 3 {
		t.Errorf("after the redirect: %+v", st)
	}
}

// Stats, which the metrics read on every scrape, answers while a reload
// waits on a slow source: a scrape never waits on the list's server.
func TestDisposableFeedStatsDuringSlowReload(t *testing.T) {
	t.Parallel()
	srv := startFeedServer(t)
	arrived := make(chan struct{}, 1)
	release := make(chan struct{})
	srv.serve(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
		}
		_, _ = w.Write([]byte("slow-burner.com\n"))
	})
	feed, err := emailcheck.NewDisposableFeed(srv.web.URL+"/list.txt", &emailcheck.FeedConfig{Timeout: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	reloaded := make(chan error, 1)
	go func() { reloaded <- feed.Reload(context.Background()) }()
	<-arrived
	stats := make(chan emailcheck.FeedStats, 1)
	go func() { stats <- feed.Stats() }()
	select {
	case <-stats:
	case <-time.After(30 * time.Second):
		t.Error("Stats blocked for 30s behind a reload waiting on its source")
	}
	close(release)
	if err := <-reloaded; err != nil {
		t.Fatal(err)
	}
}

// A list whose owner halves it at every fetch shrinks it step by step:
// the half rule stops a truncated download, not the source's owner, who
// could as well replace every domain. What holds: the embedded lists stay
// in force whatever the feed says, and every step counts in Loads and
// shows in Domains for the operator's alert.
func TestDisposableFeedShrinkSteps(t *testing.T) {
	t.Parallel()
	srv := startFeedServer(t)
	list := func(n int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "burner-%d.com\n", i)
		}
		return b.String()
	}
	srv.serveList(list(1024))
	feed, err := emailcheck.NewDisposableFeed(srv.web.URL+"/list.txt", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := reloadWithin(t, feed); err != nil {
		t.Fatal(err)
	}
	// One less than half is refused; half is taken.
	srv.serveList(list(511))
	if err := reloadWithin(t, feed); !errors.Is(err, emailcheck.ErrFeedRefused) {
		t.Errorf("511 of 1024: Reload = %v, want ErrFeedRefused", err)
	}
	steps := 0
	for n := 512; n >= 1; n /= 2 {
		srv.serveList(list(n))
		if err := reloadWithin(t, feed); err != nil {
			t.Fatalf("%d domains: %v", n, err)
		}
		steps++
	}
	if st := feed.Stats(); st.Domains != 1 || st.Loads != uint64(1+steps) || steps != 10 {
		t.Errorf("after %d halvings: %+v", steps, st)
	}
}

// A list that flips between two versions at every fetch is taken each
// time, and validations running meanwhile (under -race) see one list or
// the other, never a verdict neither gives: a domain on both is always
// DISPOSABLE, a domain on neither or allowlisted never is.
func TestDisposableFeedFlipping(t *testing.T) {
	t.Parallel()
	zone := dnstest.Zone{}
	for i, d := range []string{"on-both.net", "on-a.net", "on-b.net", "on-neither.net", "gmail.com", "friend.org"} {
		// Each host an address of its own: a shared one would be
		// learnt as a burner farm's.
		zone[d] = dnstest.Domain{MX: []dnstest.MX{{Pref: 10, Host: "mx." + d, Addrs: []string{fmt.Sprintf("185.199.2.%d", 10+i)}}}}
	}
	dns := dnstest.Start(t, zone, nil)
	srv := startFeedServer(t)
	var fetches atomic.Int64
	srv.serve(func(w http.ResponseWriter, r *http.Request) {
		if fetches.Add(1)%2 == 1 {
			_, _ = w.Write([]byte("on-both.net\non-a.net\ngmail.com\nfriend.org\n"))
			return
		}
		_, _ = w.Write([]byte("on-both.net\non-b.net\ngmail.com\nfriend.org\n"))
	})
	feed, err := emailcheck.NewDisposableFeed(srv.web.URL+"/list.txt", nil)
	if err != nil {
		t.Fatal(err)
	}
	v, err := emailcheck.New(&emailcheck.Config{
		Nameservers:    []string{dns.Addr()},
		QueryTimeout:   10 * time.Second,
		DisposableFeed: feed,
		AllowDomains:   []string{"friend.org"},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	if err := reloadWithin(t, feed); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var validations atomic.Int64
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				for _, tt := range []struct {
					domain string
					want   []emailcheck.Status
				}{
					{"on-both.net", []emailcheck.Status{emailcheck.StatusDisposable}},
					{"on-a.net", []emailcheck.Status{emailcheck.StatusDisposable, emailcheck.StatusLikely}},
					{"on-b.net", []emailcheck.Status{emailcheck.StatusDisposable, emailcheck.StatusLikely}},
					{"on-neither.net", []emailcheck.Status{emailcheck.StatusLikely}},
					{"gmail.com", []emailcheck.Status{emailcheck.StatusLikely}},
					{"friend.org", []emailcheck.Status{emailcheck.StatusLikely}},
				} {
					res, err := v.Validate(context.Background(), fmt.Sprintf("u%d.%d@%s", w, i, tt.domain))
					if err != nil {
						t.Error(err)
						return
					}
					validations.Add(1)
					got := res.Confidence.Status
					if got != tt.want[0] && (len(tt.want) == 1 || got != tt.want[1]) {
						t.Errorf("%s: %s (%s), want one of %v", tt.domain, got, res.Reason, tt.want)
					}
				}
			}
		}()
	}
	const flips = 41 // odd: the last fetch is the even one, list B
	for range flips {
		if err := reloadWithin(t, feed); err != nil {
			t.Error(err)
		}
	}
	// Each worker validates at least once after the last flip.
	for deadline := time.Now().Add(60 * time.Second); validations.Load() < 4*6; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Error("no validations within 60s")
			break
		}
	}
	cancel()
	wg.Wait()
	if st := feed.Stats(); st.Loads != flips+1 || st.Domains != 4 {
		t.Errorf("a flipping list: %+v, want %d loads", st, flips+1)
	}
	// Quiet again: the verdicts follow the list in use, list B.
	for domain, want := range map[string]emailcheck.Status{"on-a.net": emailcheck.StatusLikely, "on-b.net": emailcheck.StatusDisposable} {
		res, err := v.Validate(context.Background(), "x@"+domain)
		if err != nil {
			t.Fatal(err)
		}
		if res.Confidence.Status != want {
			t.Errorf("after the flips: %s is %s, want %s", domain, res.Confidence.Status, want)
		}
	}
}

// mailcheckerLines are lines of FGRibreau/mailchecker 6.0.21's published
// list (MIT, Copyright (c) 2013 Francois-Guillaume Ribreau), the upstream
// the embedded list is built from, that the build left out: public
// suffixes (dynamic-DNS zones) and real providers (free mailboxes, a
// forwarding service, a large provider's MX domain, an MX forwarding
// service), each a fact.
var (
	mailcheckerSuffixes  = []string{"ddns.net", "hopto.org", "sytes.net", "dynu.net", "msk.ru", "pp.ua", "za.com", "nom.za"}
	mailcheckerProviders = []string{"duck.com", "consultant.com", "myself.com", "techie.com", "writeme.com", "dr.com", "latinmail.com", "mexicomail.com"}
)

// The upstream list itself, pointed at as the operator's list, is taken:
// its lines that are public suffixes (which no address would match) do not
// refuse the rest.
func TestDisposableFeedUpstreamSuffixLines(t *testing.T) {
	t.Parallel()
	srv := startFeedServer(t)
	srv.serveList("upstream-burner.com\n" + strings.Join(mailcheckerSuffixes, "\n") + "\nupstream-burner.net\n")
	feed, err := emailcheck.NewDisposableFeed(srv.web.URL+"/list.txt", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := reloadWithin(t, feed); err != nil {
		t.Errorf("mailchecker's own list refused: %v", err)
	}
	if st := feed.Stats(); st.Domains != 2 {
		t.Errorf("mailchecker's own list: %+v, want its 2 burners in use", st)
	}
}

// An operator's list never makes a real provider's domain DISPOSABLE, nor
// the domains whose mail a shared mail service (a provider, gateway or
// registrar of the provider table) receives: the lines the build drops
// from the upstream lists (free providers, large providers' MX domains)
// are dropped from the operator's too, and a mistaken line naming a mail
// service must not condemn its thousands of customers. A listed burner
// and the domains its own host serves still are.
func TestDisposableFeedNeverListsProviders(t *testing.T) {
	t.Parallel()
	mx := func(host string) dnstest.Domain { return dnstest.Domain{MX: []dnstest.MX{{Pref: 10, Host: host}}} }
	zone := dnstest.Zone{
		"fresh-burner.io":    mx("mx.fresh-burner.io"),
		"on-burner-host.com": mx("in.fresh-burner.io"),
		"at-yandex.ru":       mx("mx.yandex.net"),
		"at-improvmx.com":    mx("mx1.improvmx.com"),
		"at-godaddy.com":     mx("smtp.secureserver.net"),
		"at-proofpoint.com":  mx("mx0a-00123.pphosted.com"),
		"at-fastmail.com":    mx("in1-smtp.messagingengine.com"),
		"at-google-corp.com": mx("aspmx.l.google.com"),
		"at-rackspace.com":   mx("mx1.emailsrvr.com"),
		"at-mimecast.co.uk":  mx("eu-smtp-inbound-1.mimecast.com"),
		"at-amazon-ses.com":  mx("inbound-smtp.us-east-1.amazonaws.com"),
		"at-namecheap.com":   mx("eforward1.registrar-servers.com"),
	}
	for _, d := range mailcheckerProviders {
		zone[d] = mx("mx." + d)
	}
	dns := dnstest.Start(t, zone, nil)
	list := []string{"fresh-burner.io", "yandex.net", "improvmx.com", "secureserver.net", "pphosted.com",
		"messagingengine.com", "google.com", "emailsrvr.com", "mimecast.com", "amazonaws.com",
		"registrar-servers.com"}
	list = append(list, mailcheckerProviders...)
	srv := startFeedServer(t)
	srv.serveList(strings.Join(list, "\n") + "\n")
	feed, err := emailcheck.NewDisposableFeed(srv.web.URL+"/list.txt", nil)
	if err != nil {
		t.Fatal(err)
	}
	v, err := emailcheck.New(&emailcheck.Config{Nameservers: []string{dns.Addr()}, QueryTimeout: 10 * time.Second, DisposableFeed: feed})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	ctx := context.Background()
	free := map[string]bool{}
	for _, d := range mailcheckerProviders {
		res, err := v.Validate(ctx, "jane@"+d)
		if err != nil {
			t.Fatal(err)
		}
		free[d] = res.Provider.IsFree
	}
	if err := reloadWithin(t, feed); err != nil {
		t.Fatal(err)
	}
	for domain := range zone {
		res, err := v.Validate(ctx, "jane@"+domain)
		if err != nil {
			t.Fatal(err)
		}
		want := emailcheck.StatusLikely
		if domain == "fresh-burner.io" || domain == "on-burner-host.com" {
			want = emailcheck.StatusDisposable
		}
		if res.Confidence.Status != want {
			t.Errorf("%s with the operator's list: %s (%s), want %s", domain, res.Confidence.Status, res.Reason, want)
		}
		if was, ok := free[domain]; ok && res.Provider.IsFree != was {
			t.Errorf("%s: is_free %v with the operator's list, %v without", domain, res.Provider.IsFree, was)
		}
	}
}

// A file source that is not a regular file fails its reload: a directory
// at once, a FIFO with no writer before the reload's context ends rather
// than blocking the reload (and with it the service's start and Stats)
// forever.
func TestDisposableFeedFileKinds(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	feed, err := emailcheck.NewDisposableFeed(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := reloadWithin(t, feed); err == nil || errors.Is(err, emailcheck.ErrFeedRefused) {
		t.Errorf("a directory: Reload = %v, want a read error", err)
	}
	if st := feed.Stats(); st.Failures != 1 || st.Domains != 0 {
		t.Errorf("a directory: %+v", st)
	}
	missing := filepath.Join(dir, "missing.txt")
	feed, err = emailcheck.NewDisposableFeed(missing, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := reloadWithin(t, feed); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing file: Reload = %v, want os.ErrNotExist", err)
	}
}

// A list's Unicode lines match the addresses written either way, and a
// line that IDNA maps onto a known provider (full-width letters) or a
// look-alike of one (a Cyrillic letter) never touches the provider.
func TestDisposableFeedIDN(t *testing.T) {
	t.Parallel()
	burner, err := idna.Lookup.ToASCII("bücher-burner.de")
	if err != nil {
		t.Fatal(err)
	}
	lookalike, err := idna.Lookup.ToASCII("gmаil.com") // a Cyrillic а
	if err != nil {
		t.Fatal(err)
	}
	zone := dnstest.Zone{}
	for i, d := range []string{burner, lookalike, "gmail.com"} {
		zone[d] = dnstest.Domain{MX: []dnstest.MX{{Pref: 10, Host: "mx." + d, Addrs: []string{fmt.Sprintf("185.199.3.%d", 10+i)}}}}
	}
	dns := dnstest.Start(t, zone, nil)
	srv := startFeedServer(t)
	srv.serveList("BÜCHER-burner.de\nｇｍａｉｌ．ｃｏｍ\ngmаil.com\n")
	feed, err := emailcheck.NewDisposableFeed(srv.web.URL+"/list.txt", nil)
	if err != nil {
		t.Fatal(err)
	}
	v, err := emailcheck.New(&emailcheck.Config{Nameservers: []string{dns.Addr()}, QueryTimeout: 10 * time.Second, DisposableFeed: feed})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	if err := reloadWithin(t, feed); err != nil {
		t.Fatal(err)
	}
	if st := feed.Stats(); st.Domains != 3 {
		t.Errorf("%+v, want 3 domains", st)
	}
	for email, want := range map[string]emailcheck.Status{
		"a@bücher-burner.de": emailcheck.StatusDisposable,
		"a@" + burner:        emailcheck.StatusDisposable,
		"a@gmаil.com":        emailcheck.StatusDisposable,
		"a@" + lookalike:     emailcheck.StatusDisposable,
		"a@gmail.com":        emailcheck.StatusLikely,
	} {
		res, err := v.Validate(context.Background(), email)
		if err != nil {
			t.Fatal(err)
		}
		if res.Confidence.Status != want {
			t.Errorf("%s: %s (%s), want %s", email, res.Confidence.Status, res.Reason, want)
		}
	}
}
