package httpapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"path"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/httpapi/internal/buckets"
	"github.com/validmail/validmail/httpapi/internal/uploads"
	"github.com/validmail/validmail/jobs"
	"github.com/validmail/validmail/jobs/lists"
	"github.com/validmail/validmail/plans"
	"github.com/validmail/validmail/store"
	"github.com/validmail/validmail/store/ratelimit"
)

//go:embed openapi.json
var openAPIDoc []byte

// unavailableRetryAfter is the Retry-After of 503 responses, in seconds.
const unavailableRetryAfter = "5"

// Handler serves the HTTP API. It is safe for concurrent use. Mount it at
// any prefix with http.StripPrefix.
type Handler struct {
	v        jobs.Validator
	ledger   *credits.Ledger
	queue    *jobs.Queue
	accounts store.Accounts
	usage    store.Usage
	logger   *slog.Logger
	audit    store.AuditLog
	limiter  ratelimit.Limiter
	keys     *keyCache // nil: every request asks accounts
	buffers  sync.Pool // *bytes.Buffer for writeJSON
	limit    ratelimit.Limit
	readLim  ratelimit.Limit
	acctLim  ratelimit.Limit
	authLim  ratelimit.Limit
	testLim  ratelimit.Limit
	clientIP func(*http.Request) string
	blocked  sync.Map // client key → time its failed authentications are answered 429 until
	swept    atomic.Int64
	maxBody  int64
	maxKeys  int // 0: no bound
	now      func() time.Time
	metrics  *metrics
	mux      *http.ServeMux
	hooks    *webhookRoutes // nil when webhooks are not configured
	// seller sells credits (nil: the billing routes are 404), sending
	// buyers back to checkoutSuccess or checkoutCancel.
	seller                          Seller
	checkoutSuccess, checkoutCancel string
	// plans gives each account's rate limit by its plan; nil: acctLim
	// for all.
	plans *plans.Catalog
	// adminHash is the SHA-256 of Config.AdminToken; adminOn is false when
	// none is configured and the operator's routes are not mounted.
	adminHash [sha256.Size]byte
	adminOn   bool
	// listOpts bounds list uploads; listSlots counts the uploads in
	// flight, on the handler and per account.
	listOpts  lists.Options
	listSlots *uploads.Slots
	// listSubmits bounds the lists of one account being submitted to
	// the store at once, after their upload slots are given back.
	listSubmits accountGate
	// listPace is how fast an upload must send to outlive the server's
	// read timeout.
	listPace uploads.Pace
	// workbooks admits the .xlsx exports being made.
	workbooks *WorkbookGate
}

// NewHandler returns the API over its four required parts: v validates
// the addresses of GET /validate, ledger charges and refunds credits,
// queue accepts batches and answers job status, and accounts
// authenticates API keys and stores accounts and keys. cfg (nil means
// every default) is checked once. It starts no goroutines. The error
// wraps [ErrConfig], or reports a metric that cannot be registered.
func NewHandler(v jobs.Validator, ledger *credits.Ledger, queue *jobs.Queue, accounts store.Accounts, cfg *Config) (*Handler, error) {
	if cfg == nil {
		cfg = &Config{}
	}
	if err := checkConfig(v, ledger, queue, accounts, cfg); err != nil {
		return nil, err
	}
	h := &Handler{
		v:        v,
		ledger:   ledger,
		queue:    queue,
		accounts: accounts,
		usage:    cfg.Usage,
		audit:    cfg.Audit,
		logger:   cfg.Logger,
		limiter:  cfg.RateLimiter,
		limit:    cfg.RateLimit,
		maxBody:  cfg.MaxBodyBytes,
		maxKeys:  cfg.MaxKeysPerAccount,
		now:      cfg.Now,

		plans:           cfg.Plans,
		seller:          cfg.Seller,
		checkoutSuccess: cfg.CheckoutSuccessURL,
		checkoutCancel:  cfg.CheckoutCancelURL,
		workbooks:       cfg.Workbooks,
	}
	if h.workbooks == nil {
		h.workbooks = NewWorkbookGate(WorkbookLimits{Logger: cfg.Logger})
	}
	switch {
	case h.maxKeys == 0:
		h.maxKeys = DefaultMaxKeysPerAccount
	case h.maxKeys < 0:
		h.maxKeys = 0
	}
	if h.now == nil {
		h.now = time.Now
	}
	switch ttl := cfg.KeyCacheTTL; {
	case ttl == 0:
		h.keys = newKeyCache(DefaultKeyCacheTTL, h.now)
	case ttl > 0:
		h.keys = newKeyCache(ttl, h.now)
	}
	if cfg.AdminToken != "" {
		h.adminOn, h.adminHash = true, sha256.Sum256([]byte(cfg.AdminToken))
	}
	if cfg.Webhooks != nil {
		h.hooks = &webhookRoutes{
			endpoints: cfg.Webhooks,
			outbox:    cfg.WebhookOutbox,
			sender:    cfg.WebhookSender,
			changed:   cfg.EndpointChanged,
		}
	}
	h.setupLists(cfg)
	if h.maxBody == 0 {
		h.maxBody = DefaultMaxBodyBytes
	}
	if err := h.setRateLimits(cfg); err != nil {
		return nil, err
	}
	h.clientIP = cfg.ClientIP
	if h.clientIP == nil {
		h.clientIP = remoteHost
	}
	if cfg.Registerer != nil {
		m, err := newMetrics(cfg.Registerer)
		if err != nil {
			return nil, err
		}
		h.metrics = m
	}
	h.routes()
	return h, nil
}

// checkConfig reports, as an error wrapping [ErrConfig], the first
// required part of [NewHandler] that is missing or the first setting of
// cfg that is invalid or lacks its companions.
func checkConfig(v jobs.Validator, ledger *credits.Ledger, queue *jobs.Queue, accounts store.Accounts, cfg *Config) error {
	switch {
	case v == nil:
		return fmt.Errorf("%w: a Validator is required", ErrConfig)
	case ledger == nil:
		return fmt.Errorf("%w: a Ledger is required", ErrConfig)
	case queue == nil:
		return fmt.Errorf("%w: a Queue is required", ErrConfig)
	case accounts == nil:
		return fmt.Errorf("%w: Accounts is required", ErrConfig)
	case cfg.MaxBodyBytes < 0:
		return fmt.Errorf("%w: negative MaxBodyBytes", ErrConfig)
	case cfg.RateLimit.Burst < 0, math.IsNaN(cfg.RateLimit.PerSecond), math.IsInf(cfg.RateLimit.PerSecond, 0),
		cfg.RateLimit.PerSecond == 0 && cfg.RateLimit.Burst > 0: // a bucket that never refills
		return fmt.Errorf("%w: invalid RateLimit %+v", ErrConfig, cfg.RateLimit)
	case cfg.Webhooks != nil && (cfg.WebhookOutbox == nil || cfg.WebhookSender == nil):
		return fmt.Errorf("%w: Webhooks needs WebhookOutbox and WebhookSender", ErrConfig)
	case cfg.AdminToken != "" && (len(cfg.AdminToken) < MinAdminTokenBytes || !printableASCII(cfg.AdminToken)):
		return fmt.Errorf("%w: AdminToken must be at least %d printable ASCII characters", ErrConfig, MinAdminTokenBytes)
	case cfg.Seller != nil && (cfg.CheckoutSuccessURL == "" || cfg.CheckoutCancelURL == ""):
		return fmt.Errorf("%w: Seller needs CheckoutSuccessURL and CheckoutCancelURL", ErrConfig)
	case cfg.Webhooks == nil && (cfg.WebhookOutbox != nil || cfg.WebhookSender != nil || cfg.EndpointChanged != nil):
		return fmt.Errorf("%w: WebhookOutbox, WebhookSender and EndpointChanged need Webhooks", ErrConfig)
	}
	return nil
}

// setRateLimits sets the handler's rate limiter and its limits (per
// client, per read, per account, per authentication failure, per
// webhook test) from cfg, each unset one at its default, and checks
// them.
func (h *Handler) setRateLimits(cfg *Config) error {
	switch {
	case h.limit == ratelimit.Limit{}:
		h.limit = ratelimit.Limit{PerSecond: DefaultRatePerSecond, Burst: DefaultRateBurst}
	case h.limit.PerSecond > 0 && h.limit.Burst == 0:
		h.limit.Burst = max(1, int(math.Ceil(h.limit.PerSecond)))
	}
	if h.limiter == nil {
		h.limiter = ratelimit.NewMemory(h.now)
	}
	h.readLim = cfg.ReadRateLimit
	if h.readLim == (ratelimit.Limit{}) {
		h.readLim = scaleLimit(h.limit, 10)
	}
	h.acctLim = cfg.AccountRateLimit
	if h.acctLim == (ratelimit.Limit{}) {
		h.acctLim = ratelimit.Limit{PerSecond: DefaultAccountRatePerSecond, Burst: DefaultAccountRateBurst}
		if h.limit.Unlimited() {
			h.acctLim = ratelimit.Limit{PerSecond: -1}
		}
	}
	h.authLim = cfg.AuthFailureLimit
	if h.authLim == (ratelimit.Limit{}) {
		h.authLim = ratelimit.Limit{PerSecond: DefaultAuthFailureRatePerSecond, Burst: DefaultAuthFailureBurst}
	}
	h.testLim = cfg.WebhookTestLimit
	if h.testLim == (ratelimit.Limit{}) {
		h.testLim = DefaultWebhookTestLimit
	}
	for _, l := range []*ratelimit.Limit{&h.acctLim, &h.authLim, &h.testLim} {
		if l.PerSecond > 0 && l.Burst == 0 {
			l.Burst = max(1, int(math.Ceil(l.PerSecond)))
		}
		if l.PerSecond == 0 || (!l.Unlimited() && l.Burst < 1) {
			return fmt.Errorf("%w: invalid rate limit %+v", ErrConfig, *l)
		}
	}
	return nil
}

// OpenAPI returns the OpenAPI 3.1 document of the API as embedded: served
// at /openapi.json, its servers entry names the origin and mount prefix
// the request reached instead of "/". The caller must not modify it.
func (h *Handler) OpenAPI() []byte { return openAPIDoc }

// routes builds the handler's mux. Every API route is a business handler
// wrapped by [Handler.authed] (or [Handler.authedRead] for the reads a
// client polls) with the permission it needs; /openapi.json is public.
// Then every known path answers other methods 405 with Allow, and any
// other path 404 not_found, so that no request reaches ServeMux's own
// plain-text answers. The webhook routes exist only with
// Config.Webhooks, the operator's only with Config.AdminToken.
func (h *Handler) routes() {
	mux := http.NewServeMux()
	h.mux = mux
	mux.HandleFunc("GET /validate", h.authed(store.PermValidate, h.validate))
	// A GET pattern also matches HEAD; a HEAD would pay a credit for a
	// result it never sees, so it is refused.
	mux.HandleFunc("HEAD /validate", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", "GET")
		writeProblem(w, callOf(w), CodeMethodNotAllowed, "Method HEAD is not allowed here; allowed: GET.")
	})
	mux.HandleFunc("POST /validate/async", h.authed(store.PermBatch, h.submitBatch))
	mux.HandleFunc("GET /validate/status/{job_id}", h.authedRead(store.PermBatch, h.jobStatus))
	mux.HandleFunc("GET /api/v1/account", h.authed(store.PermStats, h.account))
	mux.HandleFunc("GET /api/v1/credits/history", h.authedRead(store.PermStats, h.creditHistory))
	mux.HandleFunc("POST /api/v1/keys", h.authed(store.PermKeys, h.createKey))
	mux.HandleFunc("GET /api/v1/keys", h.authed(store.PermKeys, h.listKeys))
	mux.HandleFunc("DELETE /api/v1/keys/{id}", h.authed(store.PermKeys, h.revokeKey))
	mux.HandleFunc("GET /api/v1/batches", h.authedRead(store.PermBatch, h.listBatches))
	mux.HandleFunc("GET /api/v1/batches/{batch_id}", h.authedRead(store.PermBatch, h.getBatch))
	mux.HandleFunc("DELETE /api/v1/batches/{batch_id}", h.authed(store.PermBatch, h.deleteBatch))
	mux.HandleFunc("GET /api/v1/batches/{batch_id}/results", h.authedRead(store.PermBatch, h.batchResults))
	mux.HandleFunc("POST /api/v1/lists", h.authed(store.PermBatch, h.submitList))
	mux.HandleFunc("GET /openapi.json", h.openAPI)
	allowed := map[string]string{
		"/validate":                          "GET",
		"/validate/async":                    "POST",
		"/validate/status/{job_id}":          "GET, HEAD",
		"/api/v1/account":                    "GET, HEAD",
		"/api/v1/credits/history":            "GET, HEAD",
		"/api/v1/keys":                       "GET, HEAD, POST",
		"/api/v1/keys/{id}":                  "DELETE",
		"/openapi.json":                      "GET, HEAD",
		"/api/v1/batches":                    "GET, HEAD",
		"/api/v1/batches/{batch_id}":         "DELETE, GET, HEAD",
		"/api/v1/batches/{batch_id}/results": "GET, HEAD",
	}
	if h.hooks != nil {
		mux.HandleFunc("GET /api/v1/webhook", h.authed(store.PermWebhooks, h.getWebhook))
		mux.HandleFunc("PUT /api/v1/webhook", h.authed(store.PermWebhooks, h.putWebhook))
		mux.HandleFunc("DELETE /api/v1/webhook", h.authed(store.PermWebhooks, h.deleteWebhook))
		mux.HandleFunc("POST /api/v1/webhook/test", h.authed(store.PermWebhooks, h.testWebhook))
		mux.HandleFunc("GET /api/v1/webhook/deliveries", h.authed(store.PermWebhooks, h.webhookDeliveries))
		allowed["/api/v1/webhook"] = "DELETE, GET, HEAD, PUT"
		allowed["/api/v1/webhook/test"] = "POST"
		allowed["/api/v1/webhook/deliveries"] = "GET, HEAD"
	}
	if h.adminOn {
		h.adminRoutes(mux, allowed)
	}
	if h.seller != nil {
		h.billingRoutes(mux, allowed)
	}
	// Any other method on a known path: 405 with Allow.
	for path, allow := range allowed {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Allow", allow)
			writeProblem(w, callOf(w), CodeMethodNotAllowed, "Method "+r.Method+" is not allowed here; allowed: "+allow+".")
		})
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeProblem(w, callOf(w), CodeNotFound, "No resource at this path.")
	})
}

// call is the state of one request shared by the handler's layers.
type call struct {
	id      string
	start   time.Time
	key     store.Key
	code    Code   // the problem code sent, if any
	errText string // the cause of a 500 or 503, for the log
}

// callOf returns the call of the request w answers: ServeHTTP hands the
// routes a *statusWriter that carries it.
func callOf(w http.ResponseWriter) *call {
	if sw, ok := w.(*statusWriter); ok {
		return sw.c
	}
	return &call{id: newRequestID()} // a route reached without ServeHTTP: cannot happen
}

// newRequestID returns a random (version 4) UUID naming a request. Its
// bits come from the runtime's per-thread ChaCha8 generator rather than
// the kernel: a request id must be unique and unguessable enough to name
// a log line, not a secret.
func newRequestID() string {
	var u uuid.UUID
	binary.LittleEndian.PutUint64(u[:8], rand.Uint64())
	binary.LittleEndian.PutUint64(u[8:], rand.Uint64())
	u[6] = u[6]&0x0f | 0x40 // version 4
	u[8] = u[8]&0x3f | 0x80 // RFC 9562 variant
	return u.String()
}

// requestID returns the request's id: the caller's X-Request-Id when it
// is a UUID (in its canonical lower-case form), so that a gateway's or a
// client's trace can be followed into the logs; anything else is
// replaced by a new one, never echoed.
func requestID(r *http.Request) string {
	if v := r.Header.Get("X-Request-Id"); len(v) == 36 {
		if u, err := uuid.Parse(v); err == nil {
			return u.String()
		}
	}
	return newRequestID()
}

// served is what ServeHTTP allocates per request, in one piece.
type served struct {
	call
	statusWriter
}

// ServeHTTP implements http.Handler. It is the outermost layer of every
// request, in this order:
//
//  1. a request id (the X-Request-Id header, and requestId of a problem):
//     the caller's X-Request-Id when it is a UUID, else a new one;
//  2. a recover that turns a panic into 500 internal, the cause logged;
//  3. the path check: a path that is not clean is 404, never a redirect;
//  4. the mux ([Handler.routes]), whose authenticated routes then run
//     [Handler.authedAs]'s layers before the route itself;
//  5. on the way out, [Handler.finish]: the access record and the
//     metrics, with the status sent.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s := &served{call: call{id: requestID(r), start: h.now()}}
	c, sw := &s.call, &s.statusWriter
	sw.ResponseWriter, sw.c = w, c
	sw.Header().Set("X-Request-Id", c.id)
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			c.errText = fmt.Sprintf("panic: %v\n%s", v, debug.Stack())
			if sw.status == 0 {
				writeProblem(sw, c, CodeInternal, "The server could not complete the request.")
			}
		}
		h.finish(r, c, sw.status)
	}()
	if p := r.URL.Path; !cleanPath(p) {
		// ServeMux would redirect to the cleaned path, which is wrong
		// under a prefix the host stripped.
		writeProblem(sw, c, CodeNotFound, "No resource at this path.")
		return
	}
	h.mux.ServeHTTP(sw, r)
}

// cleanPath reports whether p is a rooted path that path.Clean leaves
// alone (trailing slash aside).
func cleanPath(p string) bool {
	if p == "" || p[0] != '/' {
		return false
	}
	if !strings.Contains(p, "//") && !strings.Contains(p, "/.") {
		return true
	}
	c := path.Clean(p)
	if strings.HasSuffix(p, "/") && c != "/" {
		c += "/"
	}
	return c == p
}

// finish records the access log and the metrics of a request.
func (h *Handler) finish(r *http.Request, c *call, status int) {
	if status == 0 {
		status = http.StatusOK
	}
	route := r.Pattern
	if route == "" || route == "/" {
		route = "unmatched"
	}
	d := h.now().Sub(c.start)
	if h.metrics != nil {
		h.metrics.observe(route, status, d)
	}
	if h.logger == nil {
		return
	}
	// Access records are debug: at info the hot path stays quiet. 5xx are
	// errors, always logged.
	level := slog.LevelDebug
	if status >= 500 {
		level = slog.LevelError
	}
	if !h.logger.Enabled(r.Context(), level) {
		return
	}
	attrs := []slog.Attr{
		slog.String("request_id", c.id),
		slog.String("account_id", c.key.AccountID),
		slog.String("method", r.Method),
		slog.String("route", route),
		slog.Int("status", status),
		slog.Duration("duration", d),
	}
	if c.code != "" {
		attrs = append(attrs, slog.String("code", string(c.code)))
	}
	if c.errText != "" {
		attrs = append(attrs, slog.String("error", c.errText))
	}
	h.logger.LogAttrs(r.Context(), level, "http request", attrs...)
}

// statusWriter remembers the status code sent.
type statusWriter struct {
	http.ResponseWriter
	status int
	c      *call
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// authed wraps next with authentication, the permission check and the rate
// limit.
func (h *Handler) authed(perm store.Permission, next func(http.ResponseWriter, *http.Request, *call)) http.HandlerFunc {
	return h.authedAs(perm, false, next)
}

// authedRead is authed for the reads a client polls (job status, batches,
// results): they draw from buckets of their own, ReadRateLimit per key and
// ten times the account limit, so that polling never takes the rate the
// key's validations need.
func (h *Handler) authedRead(perm store.Permission, next func(http.ResponseWriter, *http.Request, *call)) http.HandlerFunc {
	return h.authedAs(perm, true, next)
}

// authedAs wraps next with the layers every authenticated route runs, in
// this order, each answering the request itself when it refuses:
//
//  1. the client address's failed-authentication bucket: an address that
//     used it up gets 429 before any key lookup ([Handler.authBlocked]);
//  2. the x-api-key header: missing is 401 missing_api_key, malformed
//     401 invalid_api_key, both counted against the address;
//  3. the key: from the per-instance key cache or Accounts
//     ([Handler.authenticate]); unknown or revoked is 401 (counted), a
//     backend failure 503 or 500 ([Handler.backendError]);
//  4. the key's account: one whose email is unconfirmed is 403
//     email_unconfirmed on every route (an unconfirmed account is inert:
//     see the route table in the package doc);
//  5. the permission perm: 403 permission_denied naming it;
//  6. the rate limits, the key's bucket and its account's in one call
//     ([Handler.allowed]): 429 with Retry-After; read routes use their
//     own pair of buckets; the account's limit is its plan's
//     ([Config.Plans]), its plan read with the key (cached as long);
//  7. next, with the call carrying the key.
//
// Charging credits is next's job, after its own input checks, so that a
// refused request never costs a credit.
func (h *Handler) authedAs(perm store.Permission, read bool, next func(http.ResponseWriter, *http.Request, *call)) http.HandlerFunc {
	keyLimit, acctLimit, prefix := h.limit, h.acctLim, ""
	if read {
		keyLimit, acctLimit, prefix = h.readLim, scaleLimit(h.acctLim, 10), "read:"
	}
	return func(w http.ResponseWriter, r *http.Request) {
		c := callOf(w)
		ip := ratelimit.SubscriberKey(h.clientIP(r))
		if h.authBlocked(w, c, ip) {
			return
		}
		secret := r.Header.Get("X-Api-Key")
		if secret == "" {
			h.authFailed(r, c, ip)
			writeProblem(w, c, CodeMissingAPIKey, "Send your API key in the x-api-key header.")
			return
		}
		if store.CheckSecret(secret) != nil {
			h.authFailed(r, c, ip)
			writeProblem(w, c, CodeInvalidAPIKey, "The API key is not valid.")
			return
		}
		key, state, err := h.authenticate(r, secret)
		if err != nil {
			if errors.Is(err, store.ErrInvalidKey) || errors.Is(err, store.ErrNotFound) {
				h.authFailed(r, c, ip)
				writeProblem(w, c, CodeInvalidAPIKey, "The API key is not valid or has been revoked.")
				return
			}
			h.backendError(w, c, "authenticate", err)
			return
		}
		c.key = key
		if state.unconfirmed {
			writeProblem(w, c, CodeEmailUnconfirmed, "This key's account has not confirmed its email: follow the link mailed to it, then use a key created after.")
			return
		}
		if !key.Can(perm) {
			writeProblemDoc(w, c, problem{
				Code:       CodePermissionDenied,
				Detail:     "This API key lacks the " + string(perm) + " permission.",
				Permission: string(perm),
			})
			return
		}
		acct := acctLimit
		if h.plans != nil {
			acct = h.planLimit(state.plan, read)
		}
		if !h.allowed(w, r, c, prefix, keyLimit, acct) {
			return
		}
		next(w, r, c)
	}
}

// authenticate returns the key secret authenticates and the state of
// its account: from the key cache when it was authenticated within the
// TTL, else from Accounts (the key, then its account). A key whose
// account is gone is unknown.
func (h *Handler) authenticate(r *http.Request, secret string) (store.Key, keyState, error) {
	var sum [sha256.Size]byte
	if h.keys != nil {
		sum = sha256.Sum256([]byte(secret))
		if k, st, ok := h.keys.get(sum); ok {
			return k, st, nil
		}
	}
	k, err := h.accounts.Authenticate(r.Context(), secret)
	if err != nil {
		return store.Key{}, keyState{}, err
	}
	a, err := h.accounts.GetAccount(r.Context(), k.AccountID)
	if err != nil {
		return store.Key{}, keyState{}, err
	}
	st := keyState{unconfirmed: a.Unconfirmed, plan: a.Plan}
	if h.keys != nil {
		h.keys.put(sum, k, st)
	}
	return k, st, nil
}

// planLimit returns the account rate limit of the plan named name: the
// plan's rate, or the handler's account limit where the plan leaves it
// at zero; ten times larger for the reads a client polls.
func (h *Handler) planLimit(name string, read bool) ratelimit.Limit {
	p := h.plans.For(name)
	l := h.acctLim
	switch {
	case p.RatePerSecond < 0:
		l = ratelimit.Limit{PerSecond: -1}
	case p.RatePerSecond > 0:
		l = ratelimit.Limit{PerSecond: p.RatePerSecond, Burst: p.Burst}
		if l.Burst == 0 {
			l.Burst = max(1, int(math.Ceil(p.RatePerSecond)))
		}
	}
	if read {
		return scaleLimit(l, 10)
	}
	return l
}

// allowed takes a token from the key's bucket and the account's (all of
// the account's keys together: a key per request gains nothing), both or
// neither, in one call of the limiter, and answers 429 when either is
// empty. A limiter that fails lets the request through: a limiter outage
// must not take the API down.
func (h *Handler) allowed(w http.ResponseWriter, r *http.Request, c *call, prefix string, keyLimit, acctLimit ratelimit.Limit) bool {
	var reqs [2]ratelimit.Request
	n := 0
	if !keyLimit.Unlimited() {
		reqs[n] = ratelimit.Request{Key: buckets.APIKey(prefix, c.key.AccountID, c.key.ID), Limit: keyLimit}
		n++
	}
	if !acctLimit.Unlimited() {
		reqs[n] = ratelimit.Request{Key: buckets.Account(prefix, c.key.AccountID), Limit: acctLimit}
		n++
	}
	if n == 0 {
		return true
	}
	ds, err := ratelimit.AllowAll(r.Context(), h.limiter, reqs[:n])
	if err != nil {
		if h.logger != nil {
			h.logger.WarnContext(r.Context(), "httpapi: rate limiter failed; request let through", "request_id", c.id, "err", err)
		}
		return true
	}
	hd := w.Header()
	if !keyLimit.Unlimited() {
		d := ds[0]
		hd.Set("RateLimit-Limit", strconv.Itoa(d.Limit))
		hd.Set("RateLimit-Remaining", strconv.Itoa(d.Remaining))
		hd.Set("RateLimit-Reset", strconv.FormatInt(ceilSeconds(d.Reset), 10))
	}
	for i, d := range ds {
		if d.Allowed {
			continue
		}
		hd.Set("Retry-After", strconv.FormatInt(max(1, ceilSeconds(d.RetryAfter)), 10))
		if i == 0 && !keyLimit.Unlimited() {
			writeProblem(w, c, CodeRateLimited, "Too many requests for this API key; retry later.")
		} else {
			writeProblem(w, c, CodeRateLimited, "Too many requests for this account across its API keys; retry later.")
		}
		return false
	}
	return true
}

// scaleLimit returns l with k times the rate and the burst; unlimited
// stays unlimited.
func scaleLimit(l ratelimit.Limit, k int) ratelimit.Limit {
	if l.Unlimited() {
		return l
	}
	return ratelimit.Limit{PerSecond: l.PerSecond * float64(k), Burst: l.Burst * k}
}

// remoteHost is the default ClientIP: the peer's address.
func remoteHost(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// authBlocked answers 429 to a client address whose failed
// authentications used up their bucket, until it refills: without a key
// lookup, so guessing keys costs the backend nothing.
func (h *Handler) authBlocked(w http.ResponseWriter, c *call, ip string) bool {
	v, ok := h.blocked.Load(ip)
	if !ok {
		return false
	}
	until := v.(time.Time)
	now := h.now()
	if !now.Before(until) {
		h.blocked.CompareAndDelete(ip, v)
		return false
	}
	w.Header().Set("Retry-After", strconv.FormatInt(max(1, ceilSeconds(until.Sub(now))), 10))
	writeProblem(w, c, CodeRateLimited, "Too many requests without a valid API key from this address; retry later.")
	return true
}

// authFailed counts a failed authentication against the client's key
// ([ratelimit.SubscriberKey]: its IPv4 address or IPv6 /64) in the limiter,
// shared by every instance on a shared backend.
func (h *Handler) authFailed(r *http.Request, c *call, ip string) {
	if h.authLim.Unlimited() || ip == "" {
		return
	}
	d, err := h.limiter.Allow(r.Context(), "authfail:"+ip, h.authLim)
	if err != nil {
		if h.logger != nil {
			h.logger.WarnContext(r.Context(), "httpapi: rate limiter failed", "request_id", c.id, "err", err)
		}
		return
	}
	if !d.Allowed {
		now := h.now()
		h.blocked.Store(ip, now.Add(max(d.RetryAfter, time.Second)))
		h.sweepBlocked(now)
	}
}

// sweepBlocked forgets, at most once a minute, the client keys whose block
// has ended, so that the blocks of addresses that stopped coming cost no
// memory.
func (h *Handler) sweepBlocked(now time.Time) {
	last := h.swept.Load()
	if now.UnixNano()-last < int64(time.Minute) || !h.swept.CompareAndSwap(last, now.UnixNano()) {
		return
	}
	h.blocked.Range(func(k, v any) bool {
		if !now.Before(v.(time.Time)) {
			h.blocked.CompareAndDelete(k, v)
		}
		return true
	})
}

func ceilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Second - 1) / time.Second)
}

// backendError answers an error of a backend: 503 when it is unavailable
// (see [unavailable]), 500 otherwise. The cause is logged, never sent.
func (h *Handler) backendError(w http.ResponseWriter, c *call, op string, err error) {
	c.errText = op + ": " + err.Error()
	if errors.Is(err, store.ErrDataLost) {
		w.Header().Set("Retry-After", unavailableRetryAfter)
		writeProblem(w, c, CodeUnavailable, "The service's store lost its data; requests are refused until the operators restore it. Retry later.")
		return
	}
	if unavailable(err) {
		w.Header().Set("Retry-After", unavailableRetryAfter)
		writeProblem(w, c, CodeUnavailable, "A backend service is unavailable; retry later.")
		return
	}
	writeProblem(w, c, CodeInternal, "The server could not complete the request.")
}

// unavailable reports whether err means that a backend could not be
// reached in time, rather than that it failed: the store contract's
// [store.ErrUnavailable], which every backend here wraps, a deadline or
// cancellation, a closed validator, and a network error from a host's
// own backend that does not wrap ErrUnavailable.
func unavailable(err error) bool {
	var ne net.Error
	return errors.Is(err, store.ErrUnavailable) ||
		errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, context.Canceled) ||
		errors.Is(err, emailcheck.ErrClosed) ||
		errors.Is(err, net.ErrClosed) ||
		errors.As(err, &ne)
}

// writeJSON sends v as JSON with the status.
func (h *Handler) writeJSON(w http.ResponseWriter, c *call, status int, v any) {
	buf := h.buffer()
	defer h.release(buf)
	// Encode writes what Marshal would, and the newline.
	if err := json.NewEncoder(buf).Encode(v); err != nil {
		h.backendError(w, c, "encode response", err)
		return
	}
	h.writeBody(w, status, buf.Bytes())
}

// writeBody writes a JSON response body.
func (h *Handler) writeBody(w http.ResponseWriter, status int, body []byte) {
	hd := w.Header()
	hd["Content-Type"] = headerJSON
	hd.Set("Content-Length", strconv.Itoa(len(body)))
	hd["Cache-Control"] = headerNoStore
	w.WriteHeader(status)
	w.Write(body)
}

// buffer returns an empty buffer to encode a response into; release
// gives it back.
func (h *Handler) buffer() *bytes.Buffer {
	if buf, _ := h.buffers.Get().(*bytes.Buffer); buf != nil {
		return buf
	}
	return new(bytes.Buffer)
}

func (h *Handler) release(buf *bytes.Buffer) {
	if buf.Cap() <= maxPooledBuffer {
		buf.Reset()
		h.buffers.Put(buf)
	}
}

// maxPooledBuffer is the largest buffer writeJSON keeps for reuse; a
// larger one (a big page of results) is left to the collector.
const maxPooledBuffer = 64 << 10

// Header values set on every JSON response, shared: net/http only reads
// them, and Add appends to a copy (their capacity is their length).
var (
	headerJSON    = []string{"application/json"}
	headerNoStore = []string{"no-store"}
)
