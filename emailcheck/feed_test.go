package emailcheck_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/emailcheck/dnstest"
)

// listServer serves a disposable list on loopback, with an ETag, and
// counts the requests that found it unchanged.
type listServer struct {
	mu        sync.Mutex
	body      string
	version   int
	notModded int
}

func (s *listServer) set(body string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.body = body
	s.version++
}

func (s *listServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	etag := `"v` + strings.Repeat("1", s.version) + `"`
	if r.Header.Get("If-None-Match") == etag {
		s.notModded++
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.Header().Set("ETag", etag)
	w.Header().Set("Last-Modified", "Sat, 21 Nov 2026 10:00:00 GMT")
	_, _ = w.Write([]byte(s.body))
}

// A domain on the operator's list becomes DISPOSABLE once the list is
// reloaded, with no restart and no new DNS query; an allowlisted or known
// domain on it never does; a malformed, empty or truncated list is refused
// and the previous one kept.
func TestDisposableFeedReload(t *testing.T) {
	t.Parallel()
	mx := func(d string) dnstest.Domain { return dnstest.Domain{MX: []dnstest.MX{{Pref: 10, Host: "mx." + d}}} }
	srv := dnstest.Start(t, dnstest.Zone{
		"fresh-burner.test-burner.net": mx("fresh-burner.test-burner.net"),
		"new-burner.io":                mx("new-burner.io"),
		"friendly-shop.com":            mx("friendly-shop.com"),
		"gmail.com":                    mx("gmail.com"),
		"via-burner-host.com":          {MX: []dnstest.MX{{Pref: 10, Host: "in.new-burner.io"}}},
	}, nil)
	lists := &listServer{}
	lists.set("# a first list\nnew-burner.io\n")
	web := httptest.NewServer(lists)
	defer web.Close()

	feed, err := emailcheck.NewDisposableFeed(web.URL+"/disposable.txt", &emailcheck.FeedConfig{Client: web.Client()})
	if err != nil {
		t.Fatal(err)
	}
	v, err := emailcheck.New(&emailcheck.Config{
		Nameservers:    []string{srv.Addr()},
		QueryTimeout:   10 * time.Second,
		DisposableFeed: feed,
		AllowDomains:   []string{"friendly-shop.com"},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	ctx := context.Background()
	check := func(step, email string, want emailcheck.Status) {
		t.Helper()
		res, err := v.Validate(ctx, email)
		if err != nil {
			t.Fatal(err)
		}
		if res.Confidence.Status != want {
			t.Errorf("%s: %s is %s (%s), want %s", step, email, res.Confidence.Status, res.Reason, want)
		}
	}

	// Before the first load the feed lists nothing.
	check("before loading", "a@new-burner.io", emailcheck.StatusLikely)
	check("before loading", "a@fresh-burner.test-burner.net", emailcheck.StatusLikely)
	check("before loading", "a@friendly-shop.com", emailcheck.StatusLikely)
	check("before loading", "a@gmail.com", emailcheck.StatusLikely)
	if err := feed.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	check("first list", "a@new-burner.io", emailcheck.StatusDisposable)
	check("first list", "a@via-burner-host.com", emailcheck.StatusDisposable) // its MX host's domain is listed
	check("first list", "a@fresh-burner.test-burner.net", emailcheck.StatusLikely)
	if st := feed.Stats(); st.Domains != 1 || st.Loads != 1 || st.LoadedAt.IsZero() || st.ModifiedAt.IsZero() || st.LastError != "" {
		t.Errorf("after the first list: %+v", st)
	}

	// A new list: the cached verdicts are judged again without a query.
	lists.set("new-burner.io\nTest-Burner.NET\nfriendly-shop.com\ngmail.com\n")
	queries := srv.Queries()
	if err := feed.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	check("second list", "a@fresh-burner.test-burner.net", emailcheck.StatusDisposable) // a parent is listed
	check("second list", "a@friendly-shop.com", emailcheck.StatusLikely)                // allowlisted: the allowlist wins
	check("second list", "a@gmail.com", emailcheck.StatusLikely)                        // known: never disposable
	check("second list", "a@new-burner.io", emailcheck.StatusDisposable)
	if n := srv.Queries() - queries; n != 0 {
		t.Errorf("%d DNS queries to judge cached domains again, want 0", n)
	}
	if st := feed.Stats(); st.Domains != 4 || st.Loads != 2 {
		t.Errorf("after the second list: %+v", st)
	}

	// Unchanged: a conditional request, nothing taken.
	if err := feed.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	if st := feed.Stats(); st.Unchanged != 1 || st.Loads != 2 || lists.notModded != 1 {
		t.Errorf("unchanged list: %+v, %d not-modified answers", st, lists.notModded)
	}
	// The same bytes under a new ETag: nothing taken either.
	lists.set("new-burner.io\nTest-Burner.NET\nfriendly-shop.com\ngmail.com\n")
	if err := feed.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	if st := feed.Stats(); st.Unchanged != 2 || st.Loads != 2 {
		t.Errorf("the same list again: %+v", st)
	}

	// Refused lists keep the one in use.
	for name, body := range map[string]string{
		"html":      "<html><body>Service Unavailable</body></html>\n",
		"bad line":  "new-burner.io\nnot a domain\ntest-burner.net\n",
		"suffixes":  "co.uk\ncom.au\n", // skipped: no domain left
		"empty":     "# nothing\n\n",
		"truncated": "new-burner.io\n", // one domain where four were
		"long line": strings.Repeat("a", 2000) + ".com\n",
	} {
		lists.set(body)
		err := feed.Reload(ctx)
		if !errors.Is(err, emailcheck.ErrFeedRefused) {
			t.Errorf("%s: Reload = %v, want ErrFeedRefused", name, err)
		}
		if st := feed.Stats(); st.Domains != 4 || st.LastError == "" {
			t.Errorf("%s: after a refused list: %+v", name, st)
		}
		check("after a refused "+name+" list", "a@fresh-burner.test-burner.net", emailcheck.StatusDisposable)
	}
	if st := feed.Stats(); st.Refused != 6 {
		t.Errorf("%d lists refused, want 6", st.Refused)
	}

	// A source that cannot be read keeps the list too.
	web.Close()
	if err := feed.Reload(ctx); err == nil || errors.Is(err, emailcheck.ErrFeedRefused) {
		t.Errorf("closed server: Reload = %v, want a read error", err)
	}
	check("source gone", "a@new-burner.io", emailcheck.StatusDisposable)
	if st := feed.Stats(); st.Failures != 1 || st.Domains != 4 {
		t.Errorf("source gone: %+v", st)
	}
}

// A list in a file is read again when the file changes, and bounded in
// size; Run checks it until its context ends.
func TestDisposableFeedFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "burners.txt")
	if err := os.WriteFile(path, []byte("burner-one.com\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	feed, err := emailcheck.NewDisposableFeed(path, &emailcheck.FeedConfig{Interval: 10 * time.Millisecond, MaxBytes: 64})
	if err != nil {
		t.Fatal(err)
	}
	srv := dnstest.Start(t, dnstest.Zone{
		"burner-one.com": {MX: []dnstest.MX{{Pref: 10, Host: "mx.burner-one.com"}}},
		"burner-two.com": {MX: []dnstest.MX{{Pref: 10, Host: "mx.burner-two.com"}}},
	}, nil)
	v, err := emailcheck.New(&emailcheck.Config{Nameservers: []string{srv.Addr()}, QueryTimeout: 10 * time.Second, DisposableFeed: feed})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- feed.Run(ctx) }()
	status := func(email string) emailcheck.Status {
		res, err := v.Validate(context.Background(), email)
		if err != nil {
			t.Fatal(err)
		}
		return res.Confidence.Status
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 30s; stats %+v", what, feed.Stats())
			}
		}
	}
	waitFor("first load", func() bool { return status("a@burner-one.com") == emailcheck.StatusDisposable })
	if status("a@burner-two.com") != emailcheck.StatusLikely {
		t.Error("burner-two.com disposable before it is listed")
	}
	if err := os.WriteFile(path, []byte("burner-one.com\nburner-two.com\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor("the file's change", func() bool { return status("a@burner-two.com") == emailcheck.StatusDisposable })
	// Too large for MaxBytes: refused, the list kept.
	if err := os.WriteFile(path, []byte(strings.Repeat("burner-three.com\n", 8)), 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor("the refusal", func() bool { return strings.Contains(feed.Stats().LastError, "bytes, more than 64") })
	if st := feed.Stats(); st.Domains != 2 || st.Refused == 0 {
		t.Errorf("after a list too large: %+v", st)
	}
	if status("a@burner-two.com") != emailcheck.StatusDisposable {
		t.Error("the list in use was dropped with the one refused")
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Run = %v, want context.Canceled", err)
	}
}

func TestDisposableFeedConfig(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		source string
		cfg    *emailcheck.FeedConfig
	}{
		{"", nil},
		{"/tmp/x", &emailcheck.FeedConfig{Interval: -1}},
		{"/tmp/x", &emailcheck.FeedConfig{MaxBytes: -1}},
	} {
		if _, err := emailcheck.NewDisposableFeed(tt.source, tt.cfg); !errors.Is(err, emailcheck.ErrConfig) {
			t.Errorf("NewDisposableFeed(%q, %+v) = %v, want ErrConfig", tt.source, tt.cfg, err)
		}
	}
}
