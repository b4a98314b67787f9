package dashboard_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/validmail/validmail/httpapi/dashboard"
	"github.com/validmail/validmail/store/backend"
	"github.com/validmail/validmail/store/ratelimit"
	"github.com/validmail/validmail/store/storeurl"
)

// user is a browser without JavaScript: a client with a cookie jar that
// does not follow redirects.
type user struct {
	t    *testing.T
	base string
	c    *http.Client
}

func newUser(t *testing.T, base string) *user {
	jar, _ := cookiejar.New(nil)
	return &user{t: t, base: base, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}}
}

type answer struct {
	code int
	hdr  http.Header
	body string
}

func (u *user) do(method, path string, form url.Values, hdr ...string) answer {
	u.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, _ := http.NewRequest(method, u.base+path, body)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := u.c.Do(req)
	if err != nil {
		u.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, resp.Header, string(b)}
}

// signup creates an account on a site without a mailer (so confirmed at
// once) and signs in: the answer is the welcome page.
func (u *user) signup(email string) answer {
	u.t.Helper()
	a := u.do("POST", "/dashboard/signup", url.Values{"email": {email}, "password": {"a long enough passphrase"}})
	if a.code != http.StatusOK || !strings.Contains(a.body, "Check your inbox") {
		u.t.Fatalf("sign-up: %d\n%s", a.code, a.body)
	}
	return u.login(email, "a long enough passphrase", http.StatusOK)
}

// login signs in and checks the status: 200 for the first sign-in (the
// welcome page), 303 after.
func (u *user) login(email, password string, want int) answer {
	u.t.Helper()
	a := u.do("POST", "/dashboard/login", url.Values{"email": {email}, "password": {password}})
	if a.code != want {
		u.t.Fatalf("sign-in as %s: %d, want %d\n%s", email, a.code, want, a.body)
	}
	return a
}

func (u *user) session() string {
	for _, c := range u.c.Jar.Cookies(mustURL(u.base)) {
		if c.Name == "vm_session" {
			return c.Value
		}
	}
	return ""
}

func mustURL(s string) *url.URL { u, _ := url.Parse(s); return u }

func TestSecurity(t *testing.T) {
	s := startSite(t, nil)

	t.Run("CrossOriginPostRefused", func(t *testing.T) {
		u := newUser(t, s.base)
		u.signup("cross@example.com")
		before := u.do("GET", "/dashboard/keys", nil).body
		a := u.do("POST", "/dashboard/keys", url.Values{"name": {"evil"}, "permissions": {"validate"}},
			"Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site")
		if a.code != http.StatusForbidden {
			t.Fatalf("cross-site POST: %d", a.code)
		}
		if after := u.do("GET", "/dashboard/keys", nil).body; strings.Count(after, "<tr") != strings.Count(before, "<tr") {
			t.Fatal("the refused POST created a key")
		}
		if a := u.do("POST", "/dashboard/keys", url.Values{"name": {"mine"}, "permissions": {"validate"}}, "Sec-Fetch-Site", "same-origin"); a.code != http.StatusCreated {
			t.Fatalf("same-origin POST: %d", a.code)
		}
	})

	t.Run("SessionRenewedAtSignIn", func(t *testing.T) {
		owner := newUser(t, s.base)
		owner.signup("fixation@example.com")
		owner.do("POST", "/dashboard/logout", nil)
		// An attacker's own session, planted in the victim's browser.
		attacker := newUser(t, s.base)
		attacker.signup("attacker@example.com")
		planted := attacker.session()
		if planted == "" {
			t.Fatal("no session after sign-in")
		}
		victim := newUser(t, s.base)
		victim.c.Jar.SetCookies(mustURL(s.base), []*http.Cookie{{Name: "vm_session", Value: planted, Path: "/"}})
		if a := victim.do("POST", "/dashboard/login", url.Values{"email": {"fixation@example.com"}, "password": {"a long enough passphrase"}}); a.code != http.StatusSeeOther {
			t.Fatalf("sign-in: %d", a.code)
		}
		if got := victim.session(); got == planted || got == "" {
			t.Fatalf("the session id was not renewed at sign-in")
		}
		if a := attacker.do("GET", "/dashboard/", nil); a.code != http.StatusSeeOther || strings.Contains(a.body, "fixation@example.com") {
			t.Fatalf("the planted session reached the victim's console: %d", a.code)
		}
		if a := victim.do("GET", "/dashboard/", nil); a.code != http.StatusOK {
			t.Fatalf("the victim's own session: %d", a.code)
		}
	})

	t.Run("MarkupEscaped", func(t *testing.T) {
		u := newUser(t, s.base)
		u.signup("escape@example.com")
		a := u.do("POST", "/dashboard/keys", url.Values{"name": {`<script>alert(1)</script>`}, "permissions": {"validate"}})
		if strings.Contains(a.body, "<script>alert") || !strings.Contains(a.body, "&lt;script&gt;alert(1)&lt;/script&gt;") {
			t.Fatalf("key name not escaped:\n%s", a.body)
		}
		a = u.do("POST", "/dashboard/bulk", url.Values{"emails": {"<script>alert(2)</script>@good.com\njane@good.com"}})
		if a.code != http.StatusSeeOther {
			t.Fatalf("bulk: %d %s", a.code, a.body)
		}
		page := u.do("GET", strings.TrimPrefix(a.hdr.Get("Location"), s.base), nil)
		if page.code != 200 || strings.Contains(page.body, "<script>alert") || !strings.Contains(page.body, "&lt;script&gt;alert(2)") {
			t.Fatalf("address not escaped: %d\n%s", page.code, page.body)
		}
	})

	t.Run("BulkLimit", func(t *testing.T) {
		u := newUser(t, s.base)
		u.signup("bulk@example.com")
		list := func(n, from int) string {
			var b strings.Builder
			for i := range n {
				fmt.Fprintf(&b, "u%d@good.com\n", from+i)
			}
			return b.String()
		}
		if a := u.do("POST", "/dashboard/bulk", url.Values{"emails": {list(300, 0)}}); a.code != http.StatusSeeOther {
			t.Fatalf("300 addresses: %d %s", a.code, a.body)
		}
		a := u.do("POST", "/dashboard/bulk", url.Values{"emails": {list(1, 300)}})
		if a.code != http.StatusTooManyRequests || !strings.Contains(a.body, "Nothing was submitted") || !strings.Contains(a.body, "More are allowed in") {
			t.Fatalf("the 301st address: %d\n%s", a.code, a.body)
		}
		batches := u.do("GET", "/dashboard/batches", nil).body
		if n := strings.Count(batches, "/results.csv\""); n != 1 {
			t.Fatalf("%d batches after the refusal, want 1", n)
		}
		if bal := u.do("GET", "/dashboard/", nil).body; !strings.Contains(bal, `id="balance">300<`) {
			t.Fatal("the free bulk tool charged credits")
		}
	})

	t.Run("SignedOutSeesNothing", func(t *testing.T) {
		owner := newUser(t, s.base)
		owner.signup("private@example.com")
		a := owner.do("POST", "/dashboard/bulk", url.Values{"emails": {"a@good.com"}})
		batch := strings.TrimPrefix(a.hdr.Get("Location"), s.base)
		anon := newUser(t, s.base)
		for _, p := range []string{"/dashboard/", "/dashboard/keys", "/dashboard/webhook", "/dashboard/bulk", "/dashboard/batches", batch, batch + "/results.csv", batch + "/progress"} {
			a := anon.do("GET", p, nil)
			if a.code != http.StatusSeeOther || !strings.Contains(a.hdr.Get("Location"), "/dashboard/login") || strings.Contains(a.body, "a@good.com") {
				t.Errorf("GET %s signed out: %d %s", p, a.code, a.hdr.Get("Location"))
			}
		}
		for _, p := range []string{"/dashboard/keys", "/dashboard/webhook", "/dashboard/bulk", "/dashboard/webhook/test", "/dashboard/webhook/rotate", "/dashboard/keys/x/revoke"} {
			if a := anon.do("POST", p, url.Values{}); a.code != http.StatusUnauthorized {
				t.Errorf("POST %s signed out: %d", p, a.code)
			}
		}
		// Another account's batch is no one's.
		other := newUser(t, s.base)
		other.signup("other@example.com")
		for _, p := range []string{batch, batch + "/results.csv"} {
			if a := other.do("GET", p, nil); a.code != http.StatusNotFound || strings.Contains(a.body, "a@good.com") {
				t.Errorf("GET %s as another account: %d", p, a.code)
			}
		}
	})

	t.Run("LoginThrottle", func(t *testing.T) {
		// A site of its own whose limiter's clock stands still: the
		// failures count in windows of the wall clock, and six attempts
		// slowed by a loaded machine could otherwise straddle two.
		still := time.Now()
		s := startSite(t, nil, func(dc *dashboard.Config, _ string) {
			dc.Limiter = ratelimit.NewMemory(func() time.Time { return still })
		})
		u := newUser(t, s.base)
		u.signup("throttle@example.com")
		u.do("POST", "/dashboard/logout", nil)
		var last answer
		for range 6 {
			last = u.do("POST", "/dashboard/login", url.Values{"email": {"throttle@example.com"}, "password": {"wrong password!"}})
		}
		if last.code != http.StatusTooManyRequests || !strings.Contains(last.body, "Too many sign-in attempts") || last.hdr.Get("Retry-After") == "" {
			t.Fatalf("sixth wrong password: %d\n%s", last.code, last.body)
		}
		// The right password waits too: the throttle is per address, not
		// per guess.
		if a := u.do("POST", "/dashboard/login", url.Values{"email": {"throttle@example.com"}, "password": {"a long enough passphrase"}}); a.code != http.StatusTooManyRequests {
			t.Fatalf("right password while throttled: %d", a.code)
		}
	})

	t.Run("Headers", func(t *testing.T) {
		u := newUser(t, s.base)
		a := u.signup("headers@example.com")
		if a.hdr.Get("Cache-Control") != "no-store" {
			t.Errorf("the page with the first key: Cache-Control %q", a.hdr.Get("Cache-Control"))
		}
		k := u.do("POST", "/dashboard/keys", url.Values{"name": {"k"}, "permissions": {"validate"}})
		if k.hdr.Get("Cache-Control") != "no-store" {
			t.Errorf("the page with a new key: Cache-Control %q", k.hdr.Get("Cache-Control"))
		}
		for _, p := range []string{"/dashboard/", "/dashboard/login", "/demo"} {
			a := u.do("GET", p, nil)
			csp := a.hdr.Get("Content-Security-Policy")
			if !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") || a.hdr.Get("X-Frame-Options") != "DENY" {
				t.Errorf("%s: CSP %q, X-Frame-Options %q", p, csp, a.hdr.Get("X-Frame-Options"))
			}
		}
	})

	t.Run("PasswordRules", func(t *testing.T) {
		u := newUser(t, s.base)
		for pw, want := range map[string]string{"short": "8 to 128", "password123": "most common", strings.Repeat("x", 129): "8 to 128"} {
			a := u.do("POST", "/dashboard/signup", url.Values{"email": {"rules@example.com"}, "password": {pw}})
			if a.code != http.StatusUnprocessableEntity || !strings.Contains(a.body, want) || !strings.Contains(a.body, `aria-invalid="true"`) {
				t.Errorf("password %.20q: %d, want 422 saying %q", pw, a.code, want)
			}
		}
		if a := u.do("POST", "/dashboard/signup", url.Values{"email": {"not an address"}, "password": {"a long enough passphrase"}}); a.code != http.StatusUnprocessableEntity {
			t.Errorf("bad email: %d", a.code)
		}
		u.signup("twice@example.com")
		if a := newUser(t, s.base).do("POST", "/dashboard/signup", url.Values{"email": {"TWICE@example.com"}, "password": {"a long enough passphrase"}}); a.code != http.StatusOK {
			t.Errorf("the same email again: %d, want the answer of a new one", a.code)
		}
	})

	t.Run("Demo", func(t *testing.T) {
		u := newUser(t, s.base)
		a := u.do("GET", "/demo?email=jane@good.com", nil, "Accept", "application/json")
		if a.code != 200 || !strings.Contains(a.body, `"source":"demo"`) || !strings.Contains(a.body, `"status":"LIKELY"`) {
			t.Fatalf("demo JSON: %d %s", a.code, a.body)
		}
		if a := u.do("GET", "/demo?email=jane@good.com", nil); a.code != 200 || !strings.Contains(a.body, "LIKELY") {
			t.Fatalf("demo HTML: %d", a.code)
		}
		var last answer
		for range 12 {
			last = u.do("GET", "/demo?email=jane@good.com", nil, "Accept", "application/json")
		}
		if last.code != http.StatusTooManyRequests {
			t.Fatalf("the demo's 14th address in a minute: %d", last.code)
		}
	})
}

// TestSharedSessions signs in on one instance and continues on another,
// on every shared backend the environment names.
func TestSharedSessions(t *testing.T) {
	urls := map[string]string{"postgres": os.Getenv("VALIDMAIL_TEST_POSTGRES"), "redis": os.Getenv("VALIDMAIL_TEST_REDIS")}
	for name, raw := range urls {
		t.Run(name, func(t *testing.T) {
			if raw == "" {
				t.Skipf("VALIDMAIL_TEST_%s is not set", strings.ToUpper(name))
			}
			ns := "dash_" + strings.ReplaceAll(uuid.NewString()[:8], "-", "")
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
			open := func() *backend.Backend {
				b, err := storeurl.Open(context.Background(), u, &storeurl.Options{Init: true})
				if err != nil {
					t.Fatal(err)
				}
				return b
			}
			a, b := startSite(t, open()), startSite(t, open())
			one := newUser(t, a.base)
			one.signup("shared-" + name + "@example.com")
			one.do("POST", "/dashboard/logout", nil)
			one.login("shared-"+name+"@example.com", "a long enough passphrase", http.StatusSeeOther)
			two := newUser(t, b.base)
			two.c.Jar.SetCookies(mustURL(b.base), []*http.Cookie{{Name: "vm_session", Value: one.session(), Path: "/"}})
			r := two.do("GET", "/dashboard/", nil)
			if r.code != 200 || !strings.Contains(r.body, "shared-"+name+"@example.com") {
				t.Fatalf("the session on B: %d", r.code)
			}
			two.do("POST", "/dashboard/logout", nil)
			if r := one.do("GET", "/dashboard/", nil); r.code != http.StatusSeeOther {
				t.Fatalf("signed out on B, A still lets the session in: %d", r.code)
			}
		})
	}
}
