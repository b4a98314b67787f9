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
//	GET, POST /login/link      field token (the mailed link finishing a sign-in during a flood)
//	POST      /logout
//	GET, POST /confirm         fields token (the link in the confirmation mail), password, keep
//	POST      /confirm/resend
//	GET, POST /forgot          field email
//	GET, POST /reset           fields token, password, keep (the link in the reset mail)
//	GET       /account
//	POST      /account/password fields current, password
//	POST      /account/notices  field finish_mail (on, or absent): a mail when a batch finishes ([Config.Notices])
//	GET       /                overview
//	GET, POST /keys            fields name, permissions (one value each)
//	GET, POST /keys/{id}/revoke
//	GET, POST /webhook         fields url, events (one value each), enabled
//	POST      /webhook/rotate, /webhook/test
//	GET, POST /webhook/delete  (a confirmation, then the endpoint's removal)
//	GET, POST /bulk            field emails (one per line) or a multipart file (.txt, .csv)
//	POST      /bulk/list       a list of any size: multipart name, file (see listtool.go)
//	GET, POST /bulk/list/{token}, POST /bulk/list/{token}/column, /bulk/list/{token}/cancel
//	GET       /batches, /batches/{id}, /batches/{id}/results.csv, /batches/{id}/list.csv
//	GET       /batches/{id}/results.xlsx, /batches/{id}/list.xlsx (the same rows as an .xlsx workbook)
//	GET, POST /batches/{id}/delete  (a confirmation, then the batch's erasure)
//	GET       /reference       the API reference, to anyone ([Config.OpenAPI])
//	GET       /billing         with [Config.Seller]: the packs, purchases and receipts; ?need=N
//	                           suggests a pack, ?checkout=ID (back from paying) grants a paid one
//	POST      /billing/checkout field credits: opens a checkout, then a link to its payment page
//	GET       /billing/receipts/{id} a redirect to a purchase's receipt
//	GET       /team            with [Config.Team]: the owner's team, an invitation form
//	POST      /team/invite     fields email, role (admin or member): mails a single-use link (72 h)
//	POST      /team/{id}/remove  (and the account's invitations of the member's address)
//	POST      /team/invitations/{hash}/revoke  an invitation not yet accepted, listed on /team
//	GET, POST /join            fields token (the mailed invitation, whose address GET names), password
//	GET       /audit           with [Config.Audit]: the account's audit log, newest first; ?page=N
//	GET, POST /login/code      with [Config.TwoFactor]: field code (a current TOTP code or a recovery
//	                           code), the second step of a sign-in with a second factor
//	GET, POST /account/totp    the login's second factor: a new key (otpauth URI, QR code), field code
//	POST      /account/totp/disable fields code or password
//	POST      /team/totp       field required (on, or absent): the owner requires a second factor of the team;
//	                           clearing it takes field code or password
//
// and [Dashboard.Demo] serves GET /demo?email= (HTML, or for Accept:
// application/json the answer of GET /validate: the result with its
// requestId, or an application/problem+json document with the API's
// codes).
//
// "Send test event" puts a webhook.test event in [Config.Outbox], so that
// it is delivered, retried and listed in the delivery log like every
// other event; the page follows it until its first attempt. Without an
// Outbox it is sent once through [Config.Sender] and shown only then.
//
// Every limit lives in [Config.Limiter], the deployment's backend, so it
// holds across instances: sign-in attempts per client address, failed
// sign-ins per email and client address and, with a much larger limit,
// per email (only attempts the limits before let through count, so
// failures from one network lock out that network, not the owner), mail
// per recipient by who asks (a known device, a known network, a stranger:
// mailbudget.go), sign-ups and
// demo validations per client address, test events per account (shared
// with the API's), and the free bulk tool's quota per account (300
// addresses per 10 minutes by default): a counter per account and fixed
// window, checked and taken in one step, all or nothing, and given back
// when the submission fails. A client address counts as its network: its
// IPv4 /24 or its IPv6 /64 ([ratelimit.ClientKey]).
//
// Every POST body is read under a limit (64 KB; the bulk tool's, 1 MB
// and its framing) and answered 413 beyond it; only the bulk tool takes
// multipart, parsed in memory. Paths, queries and form fields holding a
// NUL or bytes that are not UTF-8 are refused (400, naming the field)
// before a handler runs. Uploaded lists are decoded as spreadsheets write
// them (UTF-8, UTF-16 with a byte order mark, else Windows-1252), and the
// lines left out are listed, with their reason, on the batch's page.
//
// A list uploaded to /bulk/list is the exception to those limits: it is
// streamed into a spool within the list bounds ([Config.Lists]), two
// uploads per account and four per client network at most, kept alive
// past the server's read timeout while it sends 1 MiB per 5 s (a slow
// one losing its slot to a new upload when every slot is taken), then
// previewed with its cost (the free allowance first, credits for the
// rest) until the customer confirms, cancels, or [Config.ListWaitTTL]
// (10 minutes) passes, waiting in the shared store (so that any instance
// serves its preview and confirmation), one per account and
// [Config.MaxWaitingListsPerNetwork] per client network.
//
// Accounts: with a [Config.Mailer], sign-up creates an unconfirmed account
// and mails a single-use link (48 h) whose form confirms the address and
// grants the signup credits ([store.Accounts.ConfirmAccount]); until then
// the account is inert: it may sign in and see where it stands, nothing
// more (the route table, [Dashboard.Routes], says which state each route
// needs). Following the confirmation link, or the reset link, proves the
// address: what an unconfirmed account held (keys, webhook, sessions,
// devices, a waiting list) is removed then unless kept, and the address is
// mailed what was there (ownership.go). Sign-up, sign-in and "forgot
// password" answer the same, and do the same work, whether or not an
// account has the email; the reset link (1 h, single use) sets a new
// password and ends every session of the account, and a password change
// ends every other. Tokens reach the backend only as
// their SHA-256 ([store.Tokens], [store.SessionStore]); a session is
// written only at sign-in, never for an anonymous request. Without a
// Mailer, mail goes to the log and accounts start confirmed.
//
// Teams (team.go): an account's login is its owner, who invites admins
// and members by mail ([Config.Team]); each signs in with an email and
// password of their own, in sessions of their own, under the sign-in
// limits of that email. Every route needs a role ([RouteRole]): keys and
// the webhook need an admin, billing, the team and the account's password
// the owner; a role below gets 403 and its navigation leaves the entry
// out. An address signs in as one person: sign-up answers a member's
// address as an account's, and an invitation of an address that signs
// in already is answered as sent but stores and mails nothing. A
// removed member's session ends at its next request. The changes
// to keys, the webhook, purchases and the team are written to the
// account's audit log ([Config.Audit]), its newest
// [store.MaxAuditEntries] kept.
//
// Two-factor sign-in (twofactor.go): every login may add a TOTP
// authenticator ([Config.TwoFactor]) and gets ten single-use recovery
// codes, stored hashed. Every way of signing in (password, mailed
// sign-in link, confirmation link, joining a team) then ends on a
// pending sign-in that grants nothing until GET /login/code is
// answered, within 5 minutes and 5 wrong codes; code attempts are
// bounded per login in [Config.Limiter] (refused when it fails), and a
// code is accepted once ([store.TwoFactor.UseTOTPStep]). An owner may
// require a second factor of the whole team: a login without one is
// sent to add it after signing in and may use nothing else until then.
package dashboard

import (
	"cmp"
	"embed"
	"fmt"
	"html/template"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/alexedwards/scs/v2"

	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/httpapi"
	"github.com/validmail/validmail/httpapi/dashboard/mail"
	"github.com/validmail/validmail/httpapi/internal/uploads"
	"github.com/validmail/validmail/jobs"
	"github.com/validmail/validmail/jobs/lists"
	"github.com/validmail/validmail/plans"
	"github.com/validmail/validmail/store"
	"github.com/validmail/validmail/store/ratelimit"
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

// DefaultSignInLimit bounds the sign-in attempts of one client address:
// 20 at once, then one every 3 s.
var DefaultSignInLimit = ratelimit.Limit{PerSecond: 1.0 / 3, Burst: 20}

// DefaultSignInFailures is how many failed sign-ins an email may have
// from one client network: 5 a minute.
var DefaultSignInFailures = ratelimit.Quota{Limit: 5, Window: time.Minute}

// DefaultSignInFailuresPerEmail is how many failed sign-ins an email may
// have from every network together: 50 a minute, ten networks' worth, so
// that guessing from many networks is slowed; past it, the owner's known
// browsers still sign in, and a new one signs in by mail.
var DefaultSignInFailuresPerEmail = ratelimit.Quota{Limit: 50, Window: time.Minute}

// Storage is where the console keeps its data: all four are required,
// the fields of the same names of a deployment's backend (store/backend).
type Storage struct {
	// Accounts stores accounts and API keys.
	Accounts store.Accounts
	// Passwords keeps each account's password hash.
	Passwords store.Passwords
	// Sessions keeps the sessions, shared by every instance.
	Sessions store.SessionStore
	// Tokens keeps the single-use links the console mails (email
	// confirmation, password reset).
	Tokens store.Tokens
}

// Config configures a [Dashboard] beyond what [New] requires: the
// optional domain objects and the session, mail and limit settings.
// Every field has a documented default: a nil *Config is the zero Config.
type Config struct {
	// Usage, when set, gives the overview's validations this month by
	// status; without it the overview counts batch results only.
	Usage store.Usage
	// Validator answers the demo; nil turns the demo off.
	Validator jobs.Validator
	// Endpoints, Outbox and Sender serve the webhook page; without
	// Endpoints the page says webhooks are not available.
	Endpoints webhook.Endpoints
	Outbox    webhook.Outbox
	Sender    httpapi.WebhookSender
	// EndpointChanged, when set, is told after an account's endpoint
	// changes (a *jobevents.Builder's Forget), as httpapi.Config's
	// field of the same name.
	EndpointChanged func(accountID string)

	// Mailer sends the console's mail: the confirmation link at sign-up
	// (the signup credits arrive when it is followed), the password
	// reset link, and the note to an address that has an account
	// already. Nil writes each message to Logger instead ([mail.Log])
	// and creates accounts confirmed, their credits granted at once, as
	// no address can be proven without mail.
	Mailer mail.Mailer
	// Notices, when set, offers on the account page a mail when a batch
	// or list finishes (off until the account turns it on), sent once per
	// batch by the instances together ([Dashboard.BatchProgress],
	// [Dashboard.RunNotices]): the backend's Notices. NoticeInterval is
	// how often an instance looks for notices to mail, NoticeLease how
	// long one instance holds a notice it claimed before another may;
	// defaults [DefaultNoticeInterval], [DefaultNoticeLease].
	Notices        store.Notices
	NoticeInterval time.Duration
	NoticeLease    time.Duration

	// BaseURL is the console's public origin for the links in mail, such
	// as "https://validmail.example.com"; required with a Mailer, so that
	// no request's Host header chooses where a link points. Without a
	// Mailer the default is the request's own origin.
	BaseURL string

	// Prefix is the path the dashboard is mounted at, without a trailing
	// slash. Default [DefaultPrefix].
	Prefix string
	// DemoPath is where the host serves [Dashboard.Demo], and OpenAPIPath
	// the API's OpenAPI document, for the pages' links. Defaults "/demo"
	// and "/openapi.json"; "-" leaves the link out.
	DemoPath, OpenAPIPath string
	// OpenAPI is the API's OpenAPI 3 document (an [httpapi.Handler]'s
	// OpenAPI). When set, the console serves it as a page, GET
	// /reference, to anyone: each operation with its parameters, bodies
	// and responses, then the schemas, with no script; the footer's "API
	// reference" leads there, and the page links the raw document at
	// OpenAPIPath. Without it the footer links the raw document.
	OpenAPI []byte
	// BillingURL, when set, is linked from the overview as "Get credits":
	// the operator's own checkout, an absolute http or https URL.
	BillingURL string
	// Plans, when set, gives an account the console allowance of its
	// plan (plans.Plan.ConsoleAllowance) in place of BulkLimit where
	// the plan sets one.
	Plans *plans.Catalog
	// Seller, when set, sells credit packs on the console's "Buy credits"
	// page (GET /billing), linked from the overview and from a list
	// preview that needs more credits; it takes the place of BillingURL.
	// A billing/stripecheckout.Seller is one.
	Seller Seller
	// CheckoutReturnURL is the absolute address of the "Buy credits" page
	// (https://validmail.example.com/dashboard/billing) that buyers come
	// back to from the payment page; required with Seller.
	CheckoutReturnURL string
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
	// BulkLimit addresses per BulkWindow per account, counted in fixed
	// windows of the Limiter's clock ([ratelimit.Quota]). Defaults
	// [DefaultBulkLimit], [DefaultBulkWindow].
	BulkLimit  int
	BulkWindow time.Duration
	// DemoRate is the demo's limit per client address per minute.
	// Default [DefaultDemoRate].
	DemoRate int
	// SignupsPerHour is how many accounts one client address may create
	// per hour, in bursts of 5 (or a twelfth of the hour's, if more).
	// Default [DefaultSignupsPerHour].
	SignupsPerHour int
	// SignInLimit bounds the sign-in attempts of one client address.
	// Default [DefaultSignInLimit].
	SignInLimit ratelimit.Limit
	// SignInFailures is how many failed sign-ins an email may have per
	// window from one client address (an IPv4 /24 or an IPv6 /64,
	// [ratelimit.ClientKey]); only the attempts that SignInLimit let
	// through count, and a success costs nothing. Default
	// [DefaultSignInFailures].
	SignInFailures ratelimit.Quota
	// SignInFailuresPerEmail is how many failed sign-ins an email may
	// have per window from every client together, counting those that
	// SignInFailures let through; keep it well above SignInFailures, so
	// that a few networks cannot lock the owner out. A browser that
	// signed in to the account before (a known device: a cookie of 90
	// days, its token kept hashed with the sessions) is exempt, so that
	// many networks cannot lock the owner out either; while they keep the
	// cap full, a new browser signs in by mail: its password is checked
	// and answered alike, right or wrong, and a right one gets a link
	// mailed that finishes the sign-in in that browser only. Default
	// [DefaultSignInFailuresPerEmail].
	SignInFailuresPerEmail ratelimit.Quota
	// WebhookTestLimit bounds an account's test events, in the bucket
	// the API's POST /api/v1/webhook/test takes from too. Default
	// [httpapi.DefaultWebhookTestLimit]; a negative PerSecond turns it
	// off.
	WebhookTestLimit ratelimit.Limit
	// Limiter keeps every limit above. Give the deployment's shared
	// limiter (the backend.Backend's Limiter) so that the limits hold
	// across instances; quotas need a [ratelimit.Counter] (every backend
	// here has one), else they count in this process. Default: a
	// [ratelimit.Memory], which limits this process only.
	Limiter ratelimit.Limiter
	// Workbooks bounds the .xlsx downloads being made at once, per
	// account and per process; give it the API's ([httpapi.Config]
	// Workbooks), so that one bound covers both. nil: a gate of the
	// console's own, within the [httpapi.WorkbookLimits] defaults,
	// counting each account's in this process.
	Workbooks *httpapi.WorkbookGate
	// ClientIP returns a request's client address, for the limits per
	// client address, which count an address with the rest of its
	// network, an IPv4 /24 or an IPv6 /64. Default: the connection's
	// address (behind a proxy, set it to read the header the proxy sets,
	// and only that).
	ClientIP func(*http.Request) string
	// HashConcurrency bounds the password hashes computed at once
	// (each takes 19 MiB). Default 2.
	HashConcurrency int
	// Lists bounds the lists the bulk page takes (rows, bytes, the
	// syntax of an address), as the API's [httpapi.Config.Lists] does.
	// nil means the [lists.Options] defaults.
	Lists *lists.Options
	// MaxListUploads bounds the lists the bulk page reads at once (an
	// upload, or a list read again with another column), at most
	// [httpapi.MaxListUploadsPerAccount] of them one account's and
	// MaxListUploadsPerNetwork one client network's; more of an account
	// or a network are refused with 429. When every slot is taken, a new
	// upload takes the slot of the slowest upload averaging less than
	// ListHealthyRate, which ends with 429. Default
	// [httpapi.DefaultMaxListUploads]. The readings take at most
	// MaxListUploads × Lists.MaxBytes of the temporary directory's disk
	// (16 × 256 MiB = 4 GiB by default); the lists waiting for their
	// confirmation are kept in the store (the Queue's driver must keep
	// them, [jobs.Queue.ListDrafts], as every backend here does).
	MaxListUploads int
	// MaxListUploadsPerNetwork, ListReadWindow, ListReadMinBytes,
	// ListMaxDuration, ListHealthyRate and ListEvictAfter pace the bulk
	// page's uploads and share its slots as the API's fields of the same
	// names ([httpapi.Config]) do, with the same defaults.
	MaxListUploadsPerNetwork int
	ListReadWindow           time.Duration
	ListReadMinBytes         int64
	ListMaxDuration          time.Duration
	ListHealthyRate          int64
	ListEvictAfter           time.Duration
	// ListCountRows is the most rows of a list whose groups' sizes
	// (safe, risky, remove) its batch page counts while it answers,
	// reading the rows once per instance; a larger list's are counted in
	// the background, one list at a time per instance, the page saying so
	// until they are known. Default 100,000.
	ListCountRows int
	// ListWaitTTL is how long an uploaded list waits for its
	// confirmation. Default [DefaultListWaitTTL] (10 minutes).
	ListWaitTTL time.Duration
	// MaxWaitingListsPerNetwork bounds the lists of one client network
	// waiting for their confirmation: a new one drops the network's
	// oldest. Default [DefaultMaxWaitingListsPerNetwork].
	MaxWaitingListsPerNetwork int
	// Team, when set, lets an account's owner invite admins and members
	// by mail, each signing in with a password of their own (GET /team,
	// GET /join); without it only owners sign in. The backend's Team
	// (store/backend) is one.
	Team store.Team
	// Audit, when set, records who created or revoked keys, changed the
	// webhook, bought credits and changed the team, shown to owners and
	// admins on GET /audit. The backend's Audit is one.
	Audit store.AuditLog
	// TwoFactor, when set, lets every login add a TOTP authenticator and
	// recovery codes (GET /account/totp), asked for at each sign-in on
	// GET /login/code, and an owner require one of the whole team. The
	// backend's TwoFactor is one.
	TwoFactor store.TwoFactor
	// Logger receives the dashboard's records. Default: discard.
	Logger *slog.Logger
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// settings is a Dashboard's configuration: what New was given, with the
// defaults applied.
type settings struct {
	Config
	Storage
	Ledger *credits.Ledger
	Queue  *jobs.Queue
}

// Dashboard is the console's handler set. Create it with [New].
type Dashboard struct {
	cfg      settings
	sessions *scs.SessionManager
	pages    map[string]*template.Template
	hasher   *hasher
	handler  http.Handler
	demo     http.Handler
	limits   limiters
	mailer   mail.Mailer
	confirm  bool          // accounts start unconfirmed; a Mailer proves addresses
	sending  chan struct{} // a slot per message on its way
	// reference is Config.OpenAPI, read for its page; nil without one.
	reference *reference
	// lists bounds the list uploads and says how their lists wait.
	lists *listTool
	// notices remembers the batches whose finish notice this instance
	// added.
	notices notices
	// enroll caches the second-factor facts signed-in requests check.
	enroll enrollCaches
}

// New returns the console over its storage st, the ledger that grants
// and shows credits and the queue of its bulk tool, configured by c (nil
// means every default). It checks c once and starts no goroutines; an
// invalid configuration is an error wrapping [httpapi.ErrConfig].
func New(st Storage, ledger *credits.Ledger, queue *jobs.Queue, c *Config) (*Dashboard, error) {
	cfg, err := newSettings(st, ledger, queue, c)
	if err != nil {
		return nil, err
	}
	d := &Dashboard{
		cfg:     cfg,
		hasher:  newHasher(cfg.HashConcurrency),
		limits:  newLimiters(cfg.Limiter, cfg.Now),
		mailer:  cfg.Mailer,
		confirm: cfg.Mailer != nil,
		sending: make(chan struct{}, mailsInFlight),
		lists: newListTool(listToolConfig{slots: cfg.MaxListUploads, perNetwork: cfg.MaxListUploadsPerNetwork,
			healthy: cfg.ListHealthyRate, grace: cfg.ListEvictAfter,
			pace: uploads.Pace{Window: cfg.ListReadWindow, MinBytes: cfg.ListReadMinBytes, MaxDuration: cfg.ListMaxDuration},
			ttl:  cfg.ListWaitTTL, waitingPerNetwork: cfg.MaxWaitingListsPerNetwork, now: cfg.Now}),
	}
	if cfg.ListCountRows < 0 {
		return nil, fmt.Errorf("dashboard: %w: ListCountRows must not be negative", httpapi.ErrConfig)
	}
	d.lists.sizes.syncRows = cfg.ListCountRows
	if err := d.parseTemplates(); err != nil {
		return nil, err
	}
	if len(cfg.OpenAPI) > 0 {
		ref, err := newReference(cfg.OpenAPI)
		if err != nil {
			return nil, fmt.Errorf("dashboard: %w: OpenAPI: %w", httpapi.ErrConfig, err)
		}
		d.reference = ref
	}
	if d.mailer == nil {
		d.mailer = mail.Log{Logger: cfg.Logger}
		cfg.Logger.Warn("dashboard: no mailer: mail is written to this log, links included, and new accounts get their signup credits at once, unconfirmed")
	}
	d.sessions = d.newSessionManager()
	d.handler = d.layers()
	d.demo = securityHeaders(http.HandlerFunc(d.demoPage))
	return d, nil
}

// newSettings checks the required parts of the console and c (nil means
// every default), and returns them with every unset field at its
// default. An invalid configuration is an error wrapping
// [httpapi.ErrConfig].
func newSettings(st Storage, ledger *credits.Ledger, queue *jobs.Queue, c *Config) (settings, error) {
	if st.Accounts == nil || st.Passwords == nil || st.Sessions == nil || st.Tokens == nil || ledger == nil || queue == nil {
		return settings{}, fmt.Errorf("dashboard: %w: Accounts, Passwords, Sessions, Tokens, a Ledger and a Queue are required", httpapi.ErrConfig)
	}
	cfg := settings{Storage: st, Ledger: ledger, Queue: queue}
	if c != nil {
		cfg.Config = *c
	}
	if err := cfg.resolveAddresses(); err != nil {
		return settings{}, err
	}
	if err := cfg.resolveLimits(); err != nil {
		return settings{}, err
	}
	if cfg.ClientIP == nil {
		cfg.ClientIP = remoteIP
	}
	cfg.HashConcurrency = cmp.Or(cfg.HashConcurrency, 2)
	cfg.NoticeInterval = cmp.Or(cfg.NoticeInterval, DefaultNoticeInterval)
	cfg.NoticeLease = cmp.Or(cfg.NoticeLease, DefaultNoticeLease)
	if cfg.NoticeInterval < 0 || cfg.NoticeLease < time.Second {
		return settings{}, fmt.Errorf("dashboard: %w: NoticeInterval must be positive, NoticeLease at least a second", httpapi.ErrConfig)
	}
	cfg.Logger = cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler))
	if cfg.Workbooks == nil {
		cfg.Workbooks = httpapi.NewWorkbookGate(httpapi.WorkbookLimits{Logger: cfg.Logger})
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return cfg, nil
}

// resolveAddresses checks the console's own addresses and the ones it
// links to (BaseURL, Prefix, CheckoutReturnURL, BillingURL) and sets the
// default paths of the demo and the OpenAPI document.
func (cfg *settings) resolveAddresses() error {
	cfg.BaseURL = strings.TrimSuffix(cfg.BaseURL, "/")
	if cfg.Mailer != nil && !validBaseURL(cfg.BaseURL) {
		return fmt.Errorf("dashboard: %w: a Mailer needs BaseURL, the console's public origin such as https://validmail.example.com (got %q)", httpapi.ErrConfig, cfg.BaseURL)
	}
	cfg.Prefix = strings.TrimSuffix(cmp.Or(cfg.Prefix, DefaultPrefix), "/")
	if !strings.HasPrefix(cfg.Prefix, "/") {
		return fmt.Errorf("dashboard: %w: Prefix %q must start with /", httpapi.ErrConfig, cfg.Prefix)
	}
	if cfg.Seller != nil {
		if u, err := url.Parse(cfg.CheckoutReturnURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" {
			return fmt.Errorf("dashboard: %w: a Seller needs CheckoutReturnURL, the absolute address of the billing page (got %q)", httpapi.ErrConfig, cfg.CheckoutReturnURL)
		}
	}
	if cfg.BillingURL != "" {
		if u, err := url.Parse(cfg.BillingURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return fmt.Errorf("dashboard: %w: BillingURL %q must be an http or https URL", httpapi.ErrConfig, cfg.BillingURL)
		}
	}
	cfg.DemoPath = linkPath(cfg.DemoPath, "/demo")
	cfg.OpenAPIPath = linkPath(cfg.OpenAPIPath, "/openapi.json")
	return nil
}

// resolveLimits sets the session lifetimes, the key permissions and the
// rate limits and quotas left unset to their defaults, and checks them.
func (cfg *settings) resolveLimits() error {
	cfg.IdleTimeout = cmp.Or(cfg.IdleTimeout, DefaultIdleTimeout)
	cfg.Lifetime = cmp.Or(cfg.Lifetime, DefaultLifetime)
	if len(cfg.KeyPermissions) == 0 {
		cfg.KeyPermissions = store.AllPermissions()
	}
	for _, p := range cfg.KeyPermissions {
		if _, err := store.ParsePermission(string(p)); err != nil {
			return fmt.Errorf("dashboard: %w: KeyPermissions: %w", httpapi.ErrConfig, err)
		}
	}
	cfg.MaxKeys = cmp.Or(cfg.MaxKeys, 100)
	cfg.BulkLimit = cmp.Or(cfg.BulkLimit, DefaultBulkLimit)
	cfg.BulkWindow = cmp.Or(cfg.BulkWindow, DefaultBulkWindow)
	cfg.DemoRate = cmp.Or(cfg.DemoRate, DefaultDemoRate)
	cfg.SignupsPerHour = cmp.Or(cfg.SignupsPerHour, DefaultSignupsPerHour)
	if cfg.SignInLimit == (ratelimit.Limit{}) {
		cfg.SignInLimit = DefaultSignInLimit
	}
	if err := cfg.SignInLimit.Check(); err != nil {
		return fmt.Errorf("dashboard: %w: SignInLimit: %w", httpapi.ErrConfig, err)
	}
	if cfg.SignInFailures == (ratelimit.Quota{}) {
		cfg.SignInFailures = DefaultSignInFailures
	}
	if err := cfg.SignInFailures.Check(); err != nil {
		return fmt.Errorf("dashboard: %w: SignInFailures: %w", httpapi.ErrConfig, err)
	}
	if cfg.SignInFailuresPerEmail == (ratelimit.Quota{}) {
		cfg.SignInFailuresPerEmail = DefaultSignInFailuresPerEmail
	}
	if err := cfg.SignInFailuresPerEmail.Check(); err != nil {
		return fmt.Errorf("dashboard: %w: SignInFailuresPerEmail: %w", httpapi.ErrConfig, err)
	}
	if cfg.WebhookTestLimit == (ratelimit.Limit{}) {
		cfg.WebhookTestLimit = httpapi.DefaultWebhookTestLimit
	}
	if err := cfg.WebhookTestLimit.Check(); err != nil {
		return fmt.Errorf("dashboard: %w: WebhookTestLimit: %w", httpapi.ErrConfig, err)
	}
	if cfg.BulkLimit < 0 || cfg.BulkWindow < time.Millisecond || cfg.DemoRate < 0 || cfg.SignupsPerHour < 0 {
		return fmt.Errorf("dashboard: %w: BulkLimit, BulkWindow, DemoRate and SignupsPerHour must be positive", httpapi.ErrConfig)
	}
	return nil
}

// newSessionManager returns the console's session manager.
//
// Sessions (scs) live in the backend under the hash of their token,
// each saved with the account it signed in (sessionStore). The flow:
// a sign-in or a sign-out renews the token (a fixation defense), a
// request loads its session and saves it back only if it still exists
// (so a session ended elsewhere, by a password change, stays ended),
// and a session ends IdleTimeout after its last use or Lifetime after
// sign-in, whichever comes first.
func (d *Dashboard) newSessionManager() *scs.SessionManager {
	sm := scs.New()
	sm.Store = sessionStore{s: d.cfg.Sessions, codec: sm.Codec}
	sm.IdleTimeout = d.cfg.IdleTimeout
	sm.Lifetime = d.cfg.Lifetime
	sm.Cookie.Name = "__Host-vm_session"
	sm.Cookie.Path = "/"
	sm.Cookie.HttpOnly = true
	sm.Cookie.Secure = true
	sm.Cookie.SameSite = http.SameSiteLaxMode
	sm.Cookie.Persist = false
	if d.cfg.InsecureCookies {
		sm.Cookie.Name = "vm_session"
		sm.Cookie.Secure = false
	}
	sm.ErrorFunc = func(w http.ResponseWriter, r *http.Request, err error) {
		d.cfg.Logger.ErrorContext(r.Context(), "dashboard: session", "err", err)
		// No session is loaded here: render without one.
		d.renderPage(w, r, http.StatusServiceUnavailable, "error", page{Title: "Unavailable",
			Error: "The session store is not answering. Try again in a moment."})
	}
	return sm
}

// layers returns the handler of every console request: the route table
// wrapped in the console's layers, around d.sessions.
//
// The layers of every console request, outermost first:
//  1. securityHeaders: CSP, frame, referrer and opener policies;
//  2. trackSessionLoads: a record of the session this request loads;
//  3. sm.LoadAndSave: loads the session, saves it after the handler;
//  4. cop: cross-origin POSTs refused with 403 (after the session is
//     loaded, so that its refusal page knows who is signed in);
//  5. d.bounded: the route's body limit, before any body is read;
//  6. the mux, built from the route table (routes.go), whose private
//     routes run d.authed (a signed-in, existing account, else a
//     redirect to the sign-in page) and, unless the table lets an
//     unconfirmed account in, d.confirmed.
func (d *Dashboard) layers() http.Handler {
	mux := http.NewServeMux()
	d.routes(mux)
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d.fail(w, r, http.StatusForbidden, "This form was sent from another site, so it was refused.")
	}))
	return securityHeaders(trackSessionLoads(d.sessions.LoadAndSave(cop.Handler(d.bounded(mux)))))
}

// Handler serves the dashboard's routes, under [Config.Prefix]; mount it
// there without stripping the prefix.
func (d *Dashboard) Handler() http.Handler { return d.handler }

// Demo serves the public demo: mount it at the path of your choice (GET).
func (d *Dashboard) Demo() http.Handler { return d.demo }

// path returns the dashboard URL of a relative path.
func (d *Dashboard) path(rel string) string { return d.cfg.Prefix + rel }

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
