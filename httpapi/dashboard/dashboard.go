// Package dashboard is the customer's console and the public demo: sign
// up and sign in, API keys, the webhook, the free bulk tool, the batches,
// usage, and one-address validation without an account. It is a handler
// set a host mounts beside the API, over the same domain objects.
//
// Pages are html/template with embedded assets and no script from
// elsewhere; every form works with JavaScript off, and a vendored htmx
// (2.0.x) only adds live progress. Sessions live in the deployment's
// backend ([store.SessionStore]) through github.com/alexedwards/scs/v2, so
// they survive restarts and are shared by every instance. Every
// state-changing route is a POST behind Go's [http.CrossOriginProtection];
// pages carry a strict Content-Security-Policy (no inline script or
// style), and those that show a secret are sent with Cache-Control:
// no-store.
//
// Routes, relative to [Config.Prefix] (default /dashboard):
//
//	GET, POST /signup          fields email, password
//	GET, POST /login           fields email, password
//	POST      /logout
//	GET       /                overview
//	GET, POST /keys            fields name, permissions (one value each)
//	GET, POST /keys/{id}/revoke
//	GET, POST /webhook         fields url, events (one value each), enabled
//	POST      /webhook/rotate, /webhook/test
//	GET, POST /bulk            field emails (one per line) or a multipart file (.txt, .csv)
//	GET       /batches, /batches/{id}, /batches/{id}/results.csv
//
// and [Dashboard.Demo] serves GET /demo?email= (HTML, or the result as
// JSON for Accept: application/json).
//
// The free bulk tool's quota (300 addresses per 10 minutes per account by
// default) is counted from the account's dashboard batches in the
// backend, so it holds across instances; submissions are ordered within
// one process, and two arriving at the same instant on two instances may
// both pass.
package dashboard

import (
	"cmp"
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/alexedwards/scs/v2"
	"golang.org/x/time/rate"

	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/jobs"
	"github.com/validmail/validmail/store"
	"github.com/validmail/validmail/webhook"
)

//go:embed templates/*.html
var templateFiles embed.FS

//go:embed static
var staticFiles embed.FS

// Defaults.
const (
	DefaultPrefix      = "/dashboard"
	DefaultIdleTimeout = 2 * time.Hour
	DefaultLifetime    = 7 * 24 * time.Hour
	// DefaultBulkLimit addresses per DefaultBulkWindow per account, free.
	DefaultBulkLimit  = 300
	DefaultBulkWindow = 10 * time.Minute
	// DefaultDemoRate is how many demo validations a client address may
	// make per minute (with a burst of as many).
	DefaultDemoRate = 10
	// DefaultSignupsPerHour is how many accounts a client address may
	// create per hour.
	DefaultSignupsPerHour = 20
)

// ErrConfig reports a Config that cannot work.
var ErrConfig = errors.New("dashboard: invalid configuration")

// Validator validates one address; an *emailcheck.Validator is one.
type Validator interface {
	Validate(ctx context.Context, email string, opts ...emailcheck.CallOption) (emailcheck.Result, error)
}

// WebhookSender makes one signed attempt, for "Send test event"; a
// *webhook.Dispatcher is one.
type WebhookSender interface {
	Send(ctx context.Context, ep webhook.Endpoint, ev webhook.Event) webhook.Attempt
}

// Config configures a [Dashboard]: the same domain objects as the API's,
// plus session settings.
type Config struct {
	Accounts  store.Accounts
	Passwords store.Passwords
	Sessions  store.SessionStore
	Ledger    *credits.Ledger
	Queue     *jobs.Queue
	// Usage, when set, gives the overview's validations this month by
	// status; without it the overview counts batch results only.
	Usage store.Usage
	// Validator answers the demo; nil turns the demo off.
	Validator Validator
	// Endpoints, Outbox and Sender serve the webhook page; without
	// Endpoints the page says webhooks are not available.
	Endpoints webhook.Endpoints
	Outbox    webhook.Outbox
	Sender    WebhookSender
	// EndpointChanged, when set, is told after an account's endpoint
	// changes (a *jobevents.Source's Forget).
	EndpointChanged func(accountID string)

	// Prefix is the path the dashboard is mounted at, without a trailing
	// slash. Default [DefaultPrefix].
	Prefix string
	// DemoPath is where the host serves [Dashboard.Demo], and OpenAPIPath
	// the API's OpenAPI document, for the pages' links. Defaults "/demo"
	// and "/openapi.json"; "-" leaves the link out.
	DemoPath, OpenAPIPath string
	// InsecureCookies drops the Secure attribute and the __Host- prefix
	// of the session cookie, for plain-HTTP development on loopback only.
	InsecureCookies bool
	// IdleTimeout ends a session unused this long; Lifetime ends any
	// session this long after sign-in. Defaults [DefaultIdleTimeout] and
	// [DefaultLifetime].
	IdleTimeout, Lifetime time.Duration
	// KeyPermissions are the permissions a key created in the console
	// may carry. Default: every permission.
	KeyPermissions []store.Permission
	// MaxKeys is the most active keys an account may hold; 0 means 100.
	MaxKeys int
	// BulkLimit addresses per BulkWindow per account. Defaults
	// [DefaultBulkLimit], [DefaultBulkWindow].
	BulkLimit  int
	BulkWindow time.Duration
	// DemoRate is the demo's limit per client address per minute.
	// Default [DefaultDemoRate].
	DemoRate int
	// SignupsPerHour is how many accounts one client address may create
	// per hour, in bursts of 5 (or a twelfth of the hour's, if more).
	// Default [DefaultSignupsPerHour].
	// Sign-ins are limited per client address (20 at once, then one
	// every 3 s) and per email (5 at once, then one every 12 s).
	SignupsPerHour int
	// ClientIP returns a request's client address, for the demo's and the
	// sign-in throttles. Default: the connection's address (behind a
	// proxy, set it to read the header the proxy sets, and only that).
	ClientIP func(*http.Request) string
	// HashConcurrency bounds the password hashes computed at once
	// (each takes 19 MiB). Default 2.
	HashConcurrency int
	// Logger receives the dashboard's records. Default: discard.
	Logger *slog.Logger
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// Dashboard is the console's handler set. Create it with [New].
type Dashboard struct {
	cfg      Config
	sessions *scs.SessionManager
	pages    map[string]*template.Template
	hasher   *hasher
	handler  http.Handler
	demo     http.Handler

	loginIP, loginEmail, signupIP, demoIP *throttle
	bulkMu                                sync.Mutex // orders this process's quota checks
}

// New returns a Dashboard over cfg's objects.
func New(cfg Config) (*Dashboard, error) {
	if cfg.Accounts == nil || cfg.Passwords == nil || cfg.Sessions == nil || cfg.Ledger == nil || cfg.Queue == nil {
		return nil, fmt.Errorf("%w: Accounts, Passwords, Sessions, Ledger and Queue are required", ErrConfig)
	}
	cfg.Prefix = strings.TrimSuffix(cmp.Or(cfg.Prefix, DefaultPrefix), "/")
	if !strings.HasPrefix(cfg.Prefix, "/") {
		return nil, fmt.Errorf("%w: Prefix %q must start with /", ErrConfig, cfg.Prefix)
	}
	cfg.DemoPath = linkPath(cfg.DemoPath, "/demo")
	cfg.OpenAPIPath = linkPath(cfg.OpenAPIPath, "/openapi.json")
	cfg.IdleTimeout = cmp.Or(cfg.IdleTimeout, DefaultIdleTimeout)
	cfg.Lifetime = cmp.Or(cfg.Lifetime, DefaultLifetime)
	if len(cfg.KeyPermissions) == 0 {
		cfg.KeyPermissions = store.AllPermissions()
	}
	if err := store.CheckPermissions(cfg.KeyPermissions); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	cfg.MaxKeys = cmp.Or(cfg.MaxKeys, 100)
	cfg.BulkLimit = cmp.Or(cfg.BulkLimit, DefaultBulkLimit)
	cfg.BulkWindow = cmp.Or(cfg.BulkWindow, DefaultBulkWindow)
	cfg.DemoRate = cmp.Or(cfg.DemoRate, DefaultDemoRate)
	cfg.SignupsPerHour = cmp.Or(cfg.SignupsPerHour, DefaultSignupsPerHour)
	if cfg.ClientIP == nil {
		cfg.ClientIP = remoteIP
	}
	cfg.HashConcurrency = cmp.Or(cfg.HashConcurrency, 2)
	cfg.Logger = cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler))
	if cfg.Now == nil {
		cfg.Now = time.Now
	}

	d := &Dashboard{
		cfg:        cfg,
		hasher:     newHasher(cfg.HashConcurrency),
		loginIP:    newThrottle(rate.Every(3*time.Second), 20),
		loginEmail: newThrottle(rate.Every(12*time.Second), 5),
		signupIP:   newThrottle(rate.Every(time.Hour/time.Duration(cfg.SignupsPerHour)), max(min(cfg.SignupsPerHour, 5), cfg.SignupsPerHour/12)),
		demoIP:     newThrottle(rate.Every(time.Minute/time.Duration(cfg.DemoRate)), cfg.DemoRate),
	}
	if err := d.parseTemplates(); err != nil {
		return nil, err
	}

	sm := scs.New()
	sm.Store = cfg.Sessions
	sm.IdleTimeout = cfg.IdleTimeout
	sm.Lifetime = cfg.Lifetime
	sm.Cookie.Name = "__Host-vm_session"
	sm.Cookie.Path = "/"
	sm.Cookie.HttpOnly = true
	sm.Cookie.Secure = true
	sm.Cookie.SameSite = http.SameSiteLaxMode
	sm.Cookie.Persist = false
	if cfg.InsecureCookies {
		sm.Cookie.Name = "vm_session"
		sm.Cookie.Secure = false
	}
	sm.ErrorFunc = func(w http.ResponseWriter, r *http.Request, err error) {
		d.cfg.Logger.ErrorContext(r.Context(), "dashboard: session", "err", err)
		// No session is loaded here: render without one.
		d.renderPage(w, r, http.StatusServiceUnavailable, "error", page{Title: "Unavailable",
			Error: "The session store is not answering. Try again in a moment."})
	}
	d.sessions = sm

	mux := http.NewServeMux()
	d.routes(mux)
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d.fail(w, r, http.StatusForbidden, "This form was sent from another site, so it was refused.")
	}))
	// The session is loaded outside the cross-origin check, so that its
	// refusal page knows who is signed in.
	d.handler = securityHeaders(sm.LoadAndSave(cop.Handler(mux)))
	d.demo = securityHeaders(http.HandlerFunc(d.demoPage))
	return d, nil
}

// Handler serves the dashboard's routes, under [Config.Prefix]; mount it
// there without stripping the prefix.
func (d *Dashboard) Handler() http.Handler { return d.handler }

// Demo serves the public demo: mount it at the path of your choice (GET).
func (d *Dashboard) Demo() http.Handler { return d.demo }

// path returns the dashboard URL of a relative path.
func (d *Dashboard) path(rel string) string { return d.cfg.Prefix + rel }

func (d *Dashboard) routes(mux *http.ServeMux) {
	p := d.cfg.Prefix
	static, _ := fs.Sub(staticFiles, "static")
	mux.Handle("GET "+p+"/static/", http.StripPrefix(p+"/static/", cacheStatic(http.FileServerFS(static))))
	mux.HandleFunc("GET "+p+"/signup", d.signupPage)
	mux.HandleFunc("POST "+p+"/signup", d.signup)
	mux.HandleFunc("GET "+p+"/login", d.loginPage)
	mux.HandleFunc("POST "+p+"/login", d.login)
	mux.HandleFunc("POST "+p+"/logout", d.logout)
	mux.HandleFunc("GET "+p+"/{$}", d.authed(d.overview))
	mux.HandleFunc("GET "+p+"/keys", d.authed(d.keysPage))
	mux.HandleFunc("POST "+p+"/keys", d.authed(d.createKey))
	mux.HandleFunc("GET "+p+"/keys/{id}/revoke", d.authed(d.revokePage))
	mux.HandleFunc("POST "+p+"/keys/{id}/revoke", d.authed(d.revokeKey))
	mux.HandleFunc("GET "+p+"/webhook", d.authed(d.webhookPage))
	mux.HandleFunc("POST "+p+"/webhook", d.authed(d.saveWebhook))
	mux.HandleFunc("POST "+p+"/webhook/rotate", d.authed(d.rotateWebhook))
	mux.HandleFunc("POST "+p+"/webhook/test", d.authed(d.testWebhook))
	mux.HandleFunc("GET "+p+"/bulk", d.authed(d.bulkPage))
	mux.HandleFunc("POST "+p+"/bulk", d.authed(d.submitBulk))
	mux.HandleFunc("GET "+p+"/batches", d.authed(d.batchesPage))
	mux.HandleFunc("GET "+p+"/batches/{id}", d.authed(d.batchPage))
	mux.HandleFunc("GET "+p+"/batches/{id}/progress", d.authed(d.batchProgress))
	mux.HandleFunc("GET "+p+"/batches/{id}/results.csv", d.authed(d.batchCSV))
	mux.HandleFunc(p+"/", func(w http.ResponseWriter, r *http.Request) {
		d.fail(w, r, http.StatusNotFound, "There is no such page.")
	})
}

// securityHeaders sets the headers every dashboard and demo response
// carries.
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "+
			"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Permissions-Policy", "camera=(), microphone=(), geolocation=()")
		next.ServeHTTP(w, r)
	})
}

func cacheStatic(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=3600")
		next.ServeHTTP(w, r)
	})
}

// linkPath applies a link's default; "-" means no link.
func linkPath(p, def string) string {
	switch p {
	case "":
		return def
	case "-":
		return ""
	}
	return p
}

// remoteIP is the connection's address without its port.
func remoteIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// throttle is a token bucket per key (a client address, an email), kept in
// this process; buckets idle long enough to be full again are dropped.
type throttle struct {
	mu      sync.Mutex
	every   rate.Limit
	burst   int
	buckets map[string]*rate.Limiter
	swept   time.Time
}

func newThrottle(every rate.Limit, burst int) *throttle {
	return &throttle{every: every, burst: burst, buckets: map[string]*rate.Limiter{}}
}

// allow takes a token for key and reports whether there was one, and if
// not, how long until there is.
func (t *throttle) allow(key string, now time.Time) (bool, time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if now.Sub(t.swept) > time.Minute {
		for k, l := range t.buckets {
			if l.TokensAt(now) >= float64(t.burst) {
				delete(t.buckets, k)
			}
		}
		t.swept = now
	}
	l := t.buckets[key]
	if l == nil {
		l = rate.NewLimiter(t.every, t.burst)
		t.buckets[key] = l
	}
	res := l.ReserveN(now, 1)
	if d := res.DelayFrom(now); d > 0 {
		res.CancelAt(now)
		return false, d
	}
	return true, 0
}
