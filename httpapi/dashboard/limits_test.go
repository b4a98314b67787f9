package dashboard_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/emailcheck/dnstest"
	"github.com/validmail/validmail/httpapi"
	"github.com/validmail/validmail/httpapi/dashboard"
	"github.com/validmail/validmail/httpapi/dashboard/mail"
	"github.com/validmail/validmail/httpapi/dashboard/mail/mailtest"
	"github.com/validmail/validmail/httpapi/service"
	"github.com/validmail/validmail/jobs"
	"github.com/validmail/validmail/jobs/jobsdriver"
	"github.com/validmail/validmail/store/backend"
	"github.com/validmail/validmail/store/memstore"
	"github.com/validmail/validmail/store/ratelimit"
	"github.com/validmail/validmail/store/storeurl"
	"github.com/validmail/validmail/webhook"
)

// clientHeader carries a test request's client address, as a trusted
// proxy's header would.
const clientHeader = "X-Test-Client"

// eachBackend runs f on memory and on every shared backend the
// environment names; open returns a new handle on the test's one store
// (another instance's), and shared reports whether handles share data.
func eachBackend(t *testing.T, f func(t *testing.T, open func() *backend.Backend, shared bool)) {
	t.Run("memory", func(t *testing.T) {
		t.Parallel()
		b := memstore.NewBackend()
		f(t, func() *backend.Backend { return b }, false)
	})
	urls := map[string]string{"postgres": os.Getenv("VALIDMAIL_TEST_POSTGRES"), "redis": os.Getenv("VALIDMAIL_TEST_REDIS")}
	for name, raw := range urls {
		t.Run(name, func(t *testing.T) {
			if raw == "" {
				t.Skipf("VALIDMAIL_TEST_%s is not set", strings.ToUpper(name))
			}
			t.Parallel()
			ns := "lim_" + strings.ReplaceAll(uuid.NewString()[:8], "-", "")
			u := raw
			sep := "?"
			if strings.Contains(u, "?") {
				sep = "&"
			}
			if name == "postgres" {
				u += sep + "schema=" + ns
				t.Cleanup(func() { dropSchema(t, raw, ns) })
			} else {
				u += sep + "prefix=" + ns
			}
			f(t, func() *backend.Backend {
				b, err := storeurl.Open(context.Background(), u, &storeurl.Options{Init: true})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { b.Close() })
				return b
			}, true)
		})
	}
}

// limitSite is one instance of the service over b, with the console
// configured by dc and client addresses read from clientHeader.
type limitSite struct {
	base     string
	mu       sync.Mutex
	received int
	hook     string // the webhook receiver's URL
}

func startLimitSite(t *testing.T, b *backend.Backend, dc dashboard.Config) *limitSite {
	t.Helper()
	dns := dnstest.Start(t, dnstest.Zone{"good.com": {MX: []dnstest.MX{{Pref: 10, Host: "mx.good.com"}}}}, nil)
	s := &limitSite{}
	recv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.received++
		s.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	})}
	rl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go recv.Serve(rl)
	t.Cleanup(func() { recv.Close() })
	s.hook = "http://" + rl.Addr().String() + "/hook"
	dc.InsecureCookies = true
	svc, err := service.New(b, &service.Config{
		Checks:        &emailcheck.Config{Nameservers: []string{dns.Addr()}, AllowPrivateMX: true},
		WebhookClient: webhook.ClientOptions{Allow: []string{"127.0.0.1"}},
		API: httpapi.Config{ClientIP: func(r *http.Request) string {
			if v := r.Header.Get(clientHeader); v != "" {
				return v
			}
			host, _, _ := net.SplitHostPort(r.RemoteAddr)
			return host
		}},
		Dashboard: &dc,
		Workers:   -1,
	})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- svc.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	s.base = "http://" + ln.Addr().String()
	return s
}

func (s *limitSite) hooks() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.received
}

// from is the header pair that sends a request from addr.
func from(addr string) []string { return []string{clientHeader, addr} }

const password = "a long enough passphrase"

// Sign-in attempts refused by the limit of their client address take
// nothing from the email's limit: a client that used up its own limit
// cannot lock alice out, while failures that got through still count.
func TestSignInLockout(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, open func() *backend.Backend, _ bool) {
		s := startLimitSite(t, open(), dashboard.Config{
			SignInLimit:            ratelimit.Limit{PerSecond: 0.0001, Burst: 3},
			SignInFailures:         ratelimit.Quota{Limit: 5, Window: 1000 * time.Hour},
			SignInFailuresPerEmail: ratelimit.Quota{Limit: 8, Window: 1000 * time.Hour},
		})
		alice := newUser(t, s.base)
		alice.do("POST", "/dashboard/signup", url.Values{"email": {"alice@example.com"}, "password": {password}}, from("203.0.113.5")...)
		alice.do("POST", "/dashboard/logout", nil)

		// The attacker uses up its address's 3 attempts on other
		// emails, then tries alice's.
		attacker := newUser(t, s.base)
		const evil = "198.51.100.66"
		for i := range 3 {
			a := attacker.do("POST", "/dashboard/login", url.Values{"email": {fmt.Sprintf("x%d@example.com", i)}, "password": {"wrong password!"}}, from(evil)...)
			if a.code != http.StatusUnauthorized {
				t.Fatalf("attempt %d from the attacker: %d", i, a.code)
			}
		}
		for i := range 10 {
			a := attacker.do("POST", "/dashboard/login", url.Values{"email": {"alice@example.com"}, "password": {"wrong password!"}}, from(evil)...)
			if a.code != http.StatusTooManyRequests || a.hdr.Get("Retry-After") == "" {
				t.Fatalf("attempt %d on alice from the limited address: %d", i, a.code)
			}
		}
		// Her first sign-in shows her first key (200); later ones redirect.
		if a := alice.do("POST", "/dashboard/login", url.Values{"email": {"alice@example.com"}, "password": {password}}, from("203.0.113.5")...); a.code != http.StatusOK && a.code != http.StatusSeeOther {
			t.Fatalf("alice's own sign-in after the refused attempts: %d, want 200 or 303", a.code)
		}
		alice.do("POST", "/dashboard/logout", nil)

		// Failures that pass the address limit count against the email
		// from every network too, under a larger limit; a success gives
		// its units back.
		login := func(pw, addr string) int {
			return newUser(t, s.base).do("POST", "/dashboard/login", url.Values{"email": {"ALICE@example.com"}, "password": {pw}}, from(addr)...).code
		}
		for i := range 7 {
			if code := login("wrong password!", fmt.Sprintf("192.0.%d.1", i+1)); code != http.StatusUnauthorized {
				t.Fatalf("failure %d: %d", i+1, code)
			}
		}
		if code := login(password, "192.0.10.1"); code != http.StatusSeeOther {
			t.Fatalf("right password after 7 failures: %d", code)
		}
		if code := login("wrong password!", "192.0.11.1"); code != http.StatusUnauthorized {
			t.Fatalf("8th failure: %d", code)
		}
		// Past the cap, a new browser signs in by mail: the password is
		// checked, answered alike whether right or wrong, and no session
		// is made.
		late := newUser(t, s.base)
		if a := late.do("POST", "/dashboard/login", url.Values{"email": {"ALICE@example.com"}, "password": {password}}, from("192.0.12.1")...); a.code != http.StatusOK || !strings.Contains(a.body, "signs in by mail") || late.session() != "" {
			t.Fatalf("right password after 8 failures from 8 networks: %d, signed in: %v, want the by-mail answer", a.code, late.session() != "")
		}
	})
}

// A stranger failing again and again on alice's password, and asking for
// her reset mail again and again, from one network, locks out that
// network only: alice signs in from hers, asks for a reset link, gets it
// and uses it.
func TestStrangerCannotLockOut(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, open func() *backend.Backend, _ bool) {
		srv := mailtest.Start(t, nil)
		relay, err := mail.NewRelay(mail.RelayConfig{Addr: srv.Addr, From: "validmail <no-reply@validmail.test>"})
		if err != nil {
			t.Fatal(err)
		}
		// The default cap of failures, counted in windows of an hour
		// rather than a minute: twenty attempts on a busy machine may
		// cross a minute's boundary, never (but for one case in a few
		// thousand) an hour's.
		failures := dashboard.DefaultSignInFailures
		failures.Window = time.Hour
		s := startLimitSite(t, open(), dashboard.Config{Mailer: relay, BaseURL: "http://console.test", SignInFailures: failures})
		const home, evil = "2001:db8:b:1::10", "2001:db8:a:1::%x"
		alice := newUser(t, s.base)
		if a := alice.do("POST", "/dashboard/signup", url.Values{"email": {"alice@example.com"}, "password": {password}}, from(home)...); a.code != http.StatusOK {
			t.Fatalf("sign-up: %d", a.code)
		}
		waitLink(t, srv, "alice@example.com", "confirm")

		attacker := newUser(t, s.base)
		for i := range 20 {
			a := attacker.do("POST", "/dashboard/login", url.Values{"email": {"alice@example.com"}, "password": {"wrong password!"}}, from(fmt.Sprintf(evil, i+1))...)
			want := http.StatusUnauthorized
			if i >= dashboard.DefaultSignInFailures.Limit {
				want = http.StatusTooManyRequests
			}
			if a.code != want {
				t.Fatalf("attempt %d from the attacker's network: %d, want %d", i+1, a.code, want)
			}
		}
		for i := range 10 {
			a := attacker.do("POST", "/dashboard/forgot", url.Values{"email": {"alice@example.com"}}, from(fmt.Sprintf(evil, i+1))...)
			if a.code != http.StatusOK {
				t.Fatalf("reset request %d from the attacker's network: %d", i+1, a.code)
			}
		}
		// The attacker's network got its few messages, no more.
		resets := func() []mailtest.Received {
			var out []mailtest.Received
			for _, m := range srv.Messages() {
				if strings.Contains(m.Text(), "/dashboard/reset?token=") {
					out = append(out, m)
				}
			}
			return out
		}
		waitCount(t, func() int { return len(resets()) }, 3)

		if a := alice.do("POST", "/dashboard/login", url.Values{"email": {"alice@example.com"}, "password": {password}}, from(home)...); a.code != http.StatusOK && a.code != http.StatusSeeOther {
			t.Fatalf("alice's sign-in from her network after 20 failures elsewhere: %d, want 200 or 303", a.code)
		}
		alice.do("POST", "/dashboard/logout", nil)
		if a := newUser(t, s.base).do("POST", "/dashboard/forgot", url.Values{"email": {"alice@example.com"}}, from(home)...); a.code != http.StatusOK {
			t.Fatalf("alice's reset request: %d", a.code)
		}
		waitCount(t, func() int { return len(resets()) }, 4)
		if n := len(resets()); n != 4 {
			t.Fatalf("%d reset messages, want 3 asked by the attacker's network and alice's", n)
		}
		// Every link mailed works, whatever the limits say.
		link := linkRE.FindString(resets()[3].Text())
		if a := newUser(t, s.base).do("POST", "/dashboard/reset", url.Values{"token": {tokenOf(t, link)}, "password": {"another long passphrase"}}, from(fmt.Sprintf(evil, 99))...); a.code != http.StatusSeeOther {
			t.Fatalf("a reset link after the flood: %d\n%s", a.code, a.body)
		}
		if a := newUser(t, s.base).do("POST", "/dashboard/login", url.Values{"email": {"alice@example.com"}, "password": {"another long passphrase"}}, from(home)...); a.code != http.StatusSeeOther && a.code != http.StatusOK {
			t.Fatalf("alice's sign-in with her new password: %d", a.code)
		}
	})
}

// Strangers on many networks can fill alice's cap of failures from
// everywhere, but not keep her out of a browser she signed in from
// before: its device cookie exempts it from that cap (on any instance),
// while a browser new to her account signs in by mail until the flood
// stops (TestNewBrowserSignsInByMail).
func TestKnownDeviceNotLockedOut(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, open func() *backend.Backend, shared bool) {
		// The default limits, in windows no test outlasts.
		dc := dashboard.Config{
			SignInFailures:         ratelimit.Quota{Limit: dashboard.DefaultSignInFailures.Limit, Window: 1000 * time.Hour},
			SignInFailuresPerEmail: ratelimit.Quota{Limit: dashboard.DefaultSignInFailuresPerEmail.Limit, Window: 1000 * time.Hour},
		}
		a := startLimitSite(t, open(), dc)
		b := a
		if shared {
			b = startLimitSite(t, open(), dc)
		}
		alice := newUser(t, a.base)
		alice.do("POST", "/dashboard/signup", url.Values{"email": {"alice@example.com"}, "password": {password}}, from("203.0.113.5")...)
		alice.do("POST", "/dashboard/logout", nil)
		first := alice.do("POST", "/dashboard/login", url.Values{"email": {"alice@example.com"}, "password": {password}}, from("203.0.113.5")...)
		if first.code != http.StatusOK && first.code != http.StatusSeeOther {
			t.Fatalf("alice's sign-in: %d", first.code)
		}
		var device *http.Cookie
		for _, c := range (&http.Response{Header: first.hdr}).Cookies() {
			if c.Name == "vm_device" {
				device = c
			}
		}
		if device == nil || !device.HttpOnly || device.SameSite != http.SameSiteLaxMode || device.Path != "/" || device.MaxAge < 80*24*3600 {
			t.Fatalf("the device cookie of a sign-in: %+v, want HttpOnly, SameSite=Lax, for months", device)
		}
		alice.do("POST", "/dashboard/logout", nil)

		// 20 networks, 5 failures each: the first 10 fill the cap from
		// everywhere, then every attempt gets the by-mail answer.
		failures := map[int]int{}
		for n := range 20 {
			attacker := newUser(t, b.base)
			for range dashboard.DefaultSignInFailures.Limit {
				a := attacker.do("POST", "/dashboard/login", url.Values{"email": {"alice@example.com"}, "password": {"wrong password!"}}, from(fmt.Sprintf("198.%d.7.%d", 18+n, 1+n))...)
				failures[a.code]++
			}
		}
		if want := dashboard.DefaultSignInFailuresPerEmail.Limit; failures[http.StatusUnauthorized] != want || failures[http.StatusOK] != 100-want {
			t.Fatalf("100 failures from 20 networks: %v, want %d refused as wrong and the rest answered by mail", failures, want)
		}

		// A browser new to her account is not signed in by its password,
		// from any network; nor is one with a made-up device cookie.
		fresh := newUser(t, a.base)
		if a := fresh.do("POST", "/dashboard/login", url.Values{"email": {"alice@example.com"}, "password": {password}}, from("192.0.2.77")...); a.code != http.StatusOK || !strings.Contains(a.body, "signs in by mail") || fresh.session() != "" {
			t.Fatalf("alice from a new browser during the flood: %d, signed in: %v, want the by-mail answer", a.code, fresh.session() != "")
		}
		forged := newUser(t, a.base)
		forged.c.Jar.SetCookies(mustURL(a.base), []*http.Cookie{{Name: "vm_device", Value: "ABCDEFGHIJKLMNOPQRSTUVWXYZ", Path: "/"}})
		if a := forged.do("POST", "/dashboard/login", url.Values{"email": {"alice@example.com"}, "password": {password}}, from("192.0.2.78")...); a.code != http.StatusOK || forged.session() != "" {
			t.Fatalf("a made-up device cookie during the flood: %d, signed in: %v", a.code, forged.session() != "")
		}
		// Her own browser, from yet another network and on the other
		// instance, signs in.
		onB := &user{t: t, base: b.base, c: alice.c}
		if c := onB.do("POST", "/dashboard/login", url.Values{"email": {"alice@example.com"}, "password": {password}}, from("100.64.9.9")...).code; c != http.StatusSeeOther {
			t.Fatalf("alice from her browser during the flood: %d, want 303", c)
		}
		onB.do("POST", "/dashboard/logout", nil)
		// Her browser is still held to its network's own limit: wrong
		// passwords from it count there.
		for i := range dashboard.DefaultSignInFailures.Limit + 1 {
			want := http.StatusUnauthorized
			if i == dashboard.DefaultSignInFailures.Limit {
				want = http.StatusTooManyRequests
			}
			if c := onB.do("POST", "/dashboard/login", url.Values{"email": {"alice@example.com"}, "password": {"wrong password!"}}, from("100.64.9.9")...).code; c != want {
				t.Fatalf("failure %d from her browser: %d, want %d", i+1, c, want)
			}
		}
	})
}

// waitCount polls n until it reaches want, for as long as a loaded machine
// may need; it fails the test if it never does.
func waitCount(t *testing.T, n func() int, want int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for n() < want {
		if time.Now().After(deadline) {
			t.Fatalf("%d after a minute, want %d", n(), want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// The bulk quota is one counter per account in the backend: twenty
// submissions of 30 addresses at once, half on each of two instances,
// let exactly 300 addresses through.
func TestBulkQuotaTwoInstances(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, open func() *backend.Backend, shared bool) {
		dc := dashboard.Config{BulkWindow: 1000 * time.Hour}
		a := startLimitSite(t, open(), dc)
		b := a
		if shared {
			b = startLimitSite(t, open(), dc)
		}
		owner := newUser(t, a.base)
		owner.signup("bulk-owner@example.com")
		other := newUser(t, b.base)
		other.c.Jar.SetCookies(mustURL(b.base), []*http.Cookie{{Name: "vm_session", Value: owner.session(), Path: "/"}})

		var accepted, refused atomic.Int32
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range 20 {
			u := owner
			if i%2 == 1 {
				u = other
			}
			var list strings.Builder
			for j := range 30 {
				fmt.Fprintf(&list, "u%d-%d@good.com\n", i, j)
			}
			wg.Go(func() {
				<-start
				switch r := u.do("POST", "/dashboard/bulk", url.Values{"emails": {list.String()}}); r.code {
				case http.StatusSeeOther:
					accepted.Add(1)
				case http.StatusTooManyRequests:
					refused.Add(1)
					if !strings.Contains(r.body, "Nothing was submitted") || r.hdr.Get("Retry-After") == "" {
						t.Errorf("a refused submission: %s", r.body)
					}
				default:
					t.Errorf("a submission: %d", r.code)
				}
			})
		}
		close(start)
		wg.Wait()
		if accepted.Load() != 10 || refused.Load() != 10 {
			t.Fatalf("%d submissions of 30 accepted and %d refused; want 10 and 10 (300 addresses)", accepted.Load(), refused.Load())
		}
		page := other.do("GET", "/dashboard/batches", nil).body
		if n := strings.Count(page, "/results.csv\""); n != 10 {
			t.Fatalf("%d batches listed, want 10", n)
		}
		if page := owner.do("GET", "/dashboard/bulk", nil).body; !strings.Contains(page, `<strong id="remaining">0</strong>`) {
			t.Fatalf("the bulk page does not say 0 remain:\n%s", page)
		}
	})
}

// Sign-ups count per IPv6 /64: ten addresses of one network are one
// client.
func TestSignupPerNetwork(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, open func() *backend.Backend, _ bool) {
		s := startLimitSite(t, open(), dashboard.Config{SignupsPerHour: 5})
		codes := map[int]int{}
		for i := range 10 {
			a := newUser(t, s.base).do("POST", "/dashboard/signup",
				url.Values{"email": {fmt.Sprintf("net%d@example.com", i)}, "password": {password}},
				from(fmt.Sprintf("2001:db8:1:2:%x::%x", i*977+1, i+1))...)
			codes[a.code]++
		}
		// A sign-up answers 200 with the page saying what comes next.
		if codes[http.StatusOK] != 5 || codes[http.StatusTooManyRequests] != 5 {
			t.Fatalf("10 sign-ups from one /64: %v; want 5 accepted and 5 refused", codes)
		}
		if a := newUser(t, s.base).do("POST", "/dashboard/signup", url.Values{"email": {"next@example.com"}, "password": {password}},
			from("2001:db8:1:3::1")...); a.code != http.StatusOK {
			t.Fatalf("a sign-up from the next /64: %d", a.code)
		}
		// The demo counts the same way: its burst, then a refusal (its
		// bucket refills far slower than these requests come).
		if n := untilRefused(t, 30, func(i int) answer {
			return newUser(t, s.base).do("GET", "/demo?email=jane@good.com", nil, "Accept", "application/json", clientHeader, fmt.Sprintf("2001:db8:9:9::%x", i+1))
		}); n < dashboard.DefaultDemoRate {
			t.Fatalf("the demo refused one /64 after %d validations, want its burst of %d first", n, dashboard.DefaultDemoRate)
		}
	})
}

// untilRefused calls f until it answers 429, at most max times, and
// returns how many it let through before.
func untilRefused(t *testing.T, most int, f func(i int) answer) int {
	t.Helper()
	for i := range most {
		a := f(i)
		switch a.code {
		case http.StatusTooManyRequests:
			if a.hdr.Get("Retry-After") == "" {
				t.Fatalf("a 429 without Retry-After:\n%s", a.body)
			}
			return i
		case http.StatusOK:
		default:
			t.Fatalf("request %d: %d\n%s", i, a.code, a.body)
		}
	}
	t.Fatalf("%d requests and no refusal", most)
	return 0
}

// "Send test event" is limited per account, in the bucket the API's test
// events use.
func TestTestEventsLimited(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, open func() *backend.Backend, _ bool) {
		s := startLimitSite(t, open(), dashboard.Config{})
		u := newUser(t, s.base)
		u.signup("hooks@example.com")
		if a := u.do("POST", "/dashboard/webhook", url.Values{"url": {s.hook}, "events": {"validation.completed"}, "enabled": {"1"}}); a.code/100 != 2 {
			t.Fatalf("save the webhook: %d\n%s", a.code, a.body)
		}
		var last answer
		sent := untilRefused(t, 30, func(int) answer {
			last = u.do("POST", "/dashboard/webhook/test", url.Values{})
			if last.code == http.StatusSeeOther { // queued: the page follows its delivery
				last.code = http.StatusOK
			}
			return last
		})
		burst := httpapi.DefaultWebhookTestBurst
		if sent < burst || !strings.Contains(last.body, "Too many test events") {
			t.Fatalf("refused after %d test events, want %d first; the refusal:\n%s", sent, burst, last.body)
		}
		// The events go through the outbox: wait for the dispatcher.
		deadline := time.Now().Add(time.Minute)
		for s.hooks() < sent && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if n := s.hooks(); n != sent {
			t.Fatalf("the receiver got %d test events, want the %d sent", n, sent)
		}
	})
}

// failingJobs is a job driver whose enqueues fail while fail is set.
type failingJobs struct {
	jobsdriver.Driver
	fail atomic.Bool
}

func (f *failingJobs) Enqueue(ctx context.Context, p jobs.EnqueueParams) ([]string, error) {
	if f.fail.Load() {
		return nil, errors.New("the queue is down")
	}
	return f.Driver.Enqueue(ctx, p)
}

// A submission that fails after taking its quota gives it back.
func TestBulkQuotaRefunded(t *testing.T) {
	t.Parallel()
	b := memstore.NewBackend()
	fj := &failingJobs{Driver: b.Jobs}
	b.Jobs = fj
	s := startLimitSite(t, b, dashboard.Config{BulkWindow: 1000 * time.Hour})
	u := newUser(t, s.base)
	u.signup("refund@example.com")
	var list strings.Builder
	for i := range 300 {
		fmt.Fprintf(&list, "r%d@good.com\n", i)
	}
	fj.fail.Store(true)
	if a := u.do("POST", "/dashboard/bulk", url.Values{"emails": {list.String()}}); a.code != http.StatusServiceUnavailable {
		t.Fatalf("a submission the queue refused: %d", a.code)
	}
	fj.fail.Store(false)
	if a := u.do("POST", "/dashboard/bulk", url.Values{"emails": {list.String()}}); a.code != http.StatusSeeOther {
		t.Fatalf("the same 300 addresses once the queue is back: %d, want 303", a.code)
	}
}
