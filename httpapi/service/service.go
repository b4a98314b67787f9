// Package service assembles the whole validmail service from one
// [backend.Backend]: the validator, the credit ledger, the job queue and its
// worker pool, the webhook dispatcher and the HTTP API, started and stopped
// in the right order. It is what examples/validmaild runs, so that a host
// building its own service binary gets the same composition without
// copying it:
//
//	b, err := storeurl.Open(ctx, "memory", nil)
//	...
//	svc, err := service.New(b, &service.Config{Logger: logger})
//	...
//	svc.Mux().HandleFunc("GET /hello", hello)  // the host's own routes
//	err = svc.Serve(ctx, ln)                   // until ctx ends, then drains
//
// Every piece stays replaceable: the host may pass its own validator,
// logger, Prometheus registerer, middleware around the API, or backend
// fields of its own (an Accounts in front of the backend's, say), and may
// reach each part the service built ([Service.Queue], [Service.Ledger],
// [Service.Dispatcher], ...) to add what it needs.
//
// # Start and stop
//
// [Service.Run] runs the worker pool and the webhook dispatcher until its
// context ends; [Service.Serve] also serves HTTP on a listener. When the
// context ends, the service stops in this order, each step bounded by a
// deadline of [Config]:
//
//  1. The HTTP server stops accepting and finishes the requests in flight,
//     while the worker pool finishes the validations in flight and hands
//     its other leases back (a drain, not an abort).
//  2. Then the dispatcher stops leasing and finishes the deliveries in
//     flight, so that the events of the last jobs are either delivered or
//     left in the outbox for another instance.
//  3. Then the validator the service created and the backend are closed.
package service

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/validmail/validmail/billing/stripecheckout"
	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/httpapi"
	"github.com/validmail/validmail/httpapi/dashboard"
	"github.com/validmail/validmail/jobs"
	"github.com/validmail/validmail/store"
	"github.com/validmail/validmail/store/backend"
	"github.com/validmail/validmail/store/ratelimit"
	"github.com/validmail/validmail/webhook"
	"github.com/validmail/validmail/webhook/jobevents"
	"github.com/validmail/validmail/webhook/webhookmetrics"
)

// DefaultUsageFlushInterval is how often usage counts are written.
const DefaultUsageFlushInterval = time.Second

// Default deadlines of the shutdown steps.
const (
	// DefaultShutdownTimeout bounds the wait for HTTP requests in flight.
	DefaultShutdownTimeout = 20 * time.Second
	// DefaultDrainTimeout bounds the wait for the worker pool to finish
	// the validations in flight and hand its leases back.
	DefaultDrainTimeout = 30 * time.Second
	// DefaultDispatchStopTimeout bounds the wait for the dispatcher to
	// finish the deliveries in flight (each bounded by the client's
	// timeout) and record their outcome.
	DefaultDispatchStopTimeout = webhook.DefaultTimeout + 5*time.Second
)

// Each account's default budget of mailbox probes ([Config.ProbeLimit]):
// DefaultProbeBurst at once, then DefaultProbesPerSecond.
const (
	DefaultProbesPerSecond = 2
	DefaultProbeBurst      = 200
)

// Config configures a [Service] beyond the backend [New] requires. Every
// field has a documented default: a nil *Config is the zero Config.
type Config struct {
	// Validator validates addresses. Default: an [emailcheck.Validator]
	// built from Checks (with Logger), which the service closes.
	Validator jobs.Validator
	// Checks configures the default validator; ignored when Validator is
	// set. Nil means emailcheck's defaults. When it has a Prober and no
	// ProbeBudget, the service gives it one: ProbeLimit per account.
	Checks *emailcheck.Config
	// ProbeLimit is each account's budget of mailbox probes when Checks
	// has a Prober: a token bucket per account in the backend's shared
	// limiter (in memory when the backend has none), so that it holds
	// across instances. An address over budget keeps its DNS verdict,
	// unprobed, as does every address when the limiter fails. Calls that
	// name no account ([emailcheck.WithAccount]) share one bucket. Zero
	// means [DefaultProbesPerSecond] with bursts of [DefaultProbeBurst];
	// a negative PerSecond means no budget.
	ProbeLimit ratelimit.Limit

	// Logger receives the records of every part. Default: discard.
	Logger *slog.Logger
	// Registerer receives the API's and the webhook dispatcher's
	// Prometheus metrics. Default: none are collected.
	Registerer prometheus.Registerer
	// Gatherer, when set, is served at GET /metrics on [Service.Mux].
	// Usually the same *prometheus.Registry as Registerer.
	Gatherer prometheus.Gatherer

	// Workers is how many batch validations this process runs at once.
	// Zero means [jobs.DefaultWorkers]; a negative value runs no workers
	// here (the API and webhook delivery still run).
	Workers int
	// Pool tunes the worker pool beyond Workers: leases, retries,
	// intervals. Its Workers, NewEvents, OnComplete and Logger are set by
	// the service (OnComplete is called after the service's own hooks);
	// its Canary defaults to the validator's PingNameservers, when it has
	// one.
	Pool jobs.PoolConfig
	// Retention is how long completed jobs are kept. Default
	// [jobs.DefaultRetention].
	Retention time.Duration
	// ReadinessNeedsDNS makes GET /readyz fail (503) while no nameserver
	// answers or the nameservers cannot be believed. By default it does
	// not: every instance shares the resolver, so a DNS outage would take
	// every one out of a load balancer at once, and the API's other
	// routes (polling, results, the account, the console) still work; the
	// DNS's state is then reported in the body's "dns:" lines and in
	// metrics instead.
	ReadinessNeedsDNS bool

	// API tunes the HTTP API: its rate limit, body limit and clock. Its
	// Usage, Logger, Registerer and webhook fields are set by the service
	// (which passes the validator, ledger, queue and the backend's
	// Accounts to [httpapi.NewHandler]); RateLimiter defaults to the backend's
	// shared limiter when it has one.
	API httpapi.Config
	// Middleware wraps the API handler, the first element outermost. It
	// sees every API request (not the host's own routes on [Service.Mux]).
	Middleware []func(http.Handler) http.Handler

	// WebhookClient tunes the client that delivers webhooks: by default
	// it reaches public addresses only; Allow names the private ranges or
	// hosts a deployment's receivers live on.
	WebhookClient webhook.ClientOptions
	// Webhook tunes the dispatcher (schedule, timeouts, capacity). Its
	// Logger is set by the service, and its Observer when Registerer is
	// set and Observer is not.
	Webhook webhook.Config

	// Dashboard, when set, serves the customer's console at its Prefix
	// (default /dashboard/), the public demo at /demo, and redirects / to
	// the console. Its domain objects (accounts, passwords, sessions,
	// tokens, ledger, queue, validator, webhook parts, the finish mail's
	// notices) and Logger are set by the service from the backend, and
	// every instance's workers add the notices of finished batches and
	// its Run mails them ([dashboard.Dashboard.RunNotices]); ClientIP, Limiter (the backend's
	// shared one) and WebhookTestLimit default to the API's; the host sets
	// Mailer and BaseURL. The backend must keep passwords, sessions and
	// tokens.
	Dashboard *dashboard.Config

	// Stripe, when set, sells its Packs through Stripe Checkout
	// (billing/stripecheckout) over the backend's Billing and the
	// service's ledger: the API's billing routes, Stripe's events at
	// POST /billing/stripe/webhook and the console's "Buy credits" page.
	// Buyers return to the console's billing page under PublicURL unless
	// API.CheckoutSuccessURL and CheckoutCancelURL say otherwise. Its
	// Logger defaults to the service's.
	Stripe *stripecheckout.Config
	// PublicURL is the service's public origin (https://validmail.example.com),
	// where buyers are sent back to from Stripe's page; required with
	// Stripe unless the API's return addresses are set.
	PublicURL string

	// UsageFlushInterval is how often the validations counted by account,
	// month and status (the backend's Usage) are written, while
	// [Service.Serve] or [Service.Run] runs: counted in memory between
	// flushes, so that a validation costs the backend no write of its
	// own, and flushed once more at shutdown. A crash loses
	// at most this long's counts (never a credit). Default
	// [DefaultUsageFlushInterval]; negative writes every count at once.
	UsageFlushInterval time.Duration

	// ShutdownTimeout, DrainTimeout and DispatchStopTimeout bound the
	// shutdown steps. Defaults [DefaultShutdownTimeout],
	// [DefaultDrainTimeout] and [DefaultDispatchStopTimeout].
	ShutdownTimeout     time.Duration
	DrainTimeout        time.Duration
	DispatchStopTimeout time.Duration
}

// Service is the assembled service. Create it with [New], add routes to
// [Service.Mux] if needed, then call [Service.Serve] or [Service.Run] once.
type Service struct {
	cfg       Config
	logger    *slog.Logger
	backend   *backend.Backend
	validator jobs.Validator
	ownsV     io.Closer // the validator New built, closed with the service

	ledger *credits.Ledger
	seller *stripecheckout.Seller // nil unless Config.Stripe
	queue  *jobs.Queue
	pool   *jobs.Pool // nil when Workers < 0
	disp   *webhook.Dispatcher
	events *jobevents.Builder
	api    *httpapi.Handler
	dash   *dashboard.Dashboard // nil without a dashboard
	mux    *http.ServeMux
	usage  store.Usage        // the backend's, buffered unless configured otherwise; nil without
	buffer *store.UsageBuffer // nil when usage is written through

	stopping atomic.Bool // Run is shutting down: /readyz fails

	closeOnce sync.Once
	closeErr  error
}

// New assembles a Service over b, the deployment's storage, configured
// by cfg (nil means every default). It starts nothing: no goroutine, no
// connection. On error, nothing passed in is closed; after it, the
// service owns b and closes it when [Service.Run] or [Service.Serve]
// returns, after the workers and the dispatcher have stopped, or in
// [Service.Close].
func New(b *backend.Backend, cfg *Config) (*Service, error) {
	if cfg == nil {
		cfg = &Config{}
	}
	if err := b.Check(); err != nil {
		return nil, fmt.Errorf("service: %w: %w", httpapi.ErrConfig, err)
	}
	s := &Service{
		cfg:     *cfg,
		logger:  cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler)),
		backend: b,
	}
	s.cfg.ShutdownTimeout = cmp.Or(cfg.ShutdownTimeout, DefaultShutdownTimeout)
	s.cfg.DrainTimeout = cmp.Or(cfg.DrainTimeout, DefaultDrainTimeout)
	s.cfg.DispatchStopTimeout = cmp.Or(cfg.DispatchStopTimeout, DefaultDispatchStopTimeout)
	if err := s.build(); err != nil {
		if s.ownsV != nil {
			s.ownsV.Close()
		}
		return nil, err
	}
	return s, nil
}

func (s *Service) build() error {
	if err := s.buildValidator(); err != nil {
		return err
	}
	b := s.backend
	s.usage = b.Usage
	if b.Usage != nil && s.cfg.UsageFlushInterval >= 0 {
		s.buffer = store.NewUsageBuffer(b.Usage)
		s.usage = s.buffer
	}
	s.ledger = credits.New(b.Credits, &credits.Config{Logger: s.logger})
	q, err := jobs.NewQueue(b.Jobs, s.ledger, &jobs.Config{Retention: s.cfg.Retention, Logger: s.logger})
	if err != nil {
		return fmt.Errorf("service: %w: %w", httpapi.ErrConfig, err)
	}
	s.queue = q
	if err := s.buildWebhooks(); err != nil {
		return err
	}
	if err := s.buildPool(); err != nil {
		return err
	}
	acfg, err := s.buildAPI()
	if err != nil {
		return err
	}
	return s.buildMux(acfg)
}

// buildValidator takes the configured validator, or builds one from the
// checks' configuration (with a probe budget kept in the store when the
// checks probe mailboxes) and owns it.
func (s *Service) buildValidator() error {
	cfg := s.cfg
	s.validator = cfg.Validator
	if s.validator != nil {
		return nil
	}
	var ec emailcheck.Config
	if cfg.Checks != nil {
		ec = *cfg.Checks
	}
	ec.Logger = cmp.Or(ec.Logger, s.logger)
	if ec.Prober != nil && ec.ProbeBudget == nil {
		budget, err := newProbeBudget(s.backend.Limiter, cfg.ProbeLimit, s.logger, planProbes(cfg.API.Plans, s.backend.Accounts))
		if err != nil {
			return fmt.Errorf("service: %w: %w", httpapi.ErrConfig, err)
		}
		ec.ProbeBudget = budget
	}
	v, err := emailcheck.New(&ec)
	if err != nil {
		return fmt.Errorf("service: %w: validator: %w", httpapi.ErrConfig, err)
	}
	s.validator, s.ownsV = v, v
	return nil
}

// buildWebhooks builds the dispatcher that delivers the outbox and the
// source of job events that fills it.
func (s *Service) buildWebhooks() error {
	cfg, b := s.cfg, s.backend
	client, err := webhook.NewClient(cfg.WebhookClient)
	if err != nil {
		return fmt.Errorf("service: %w: webhook client: %w", httpapi.ErrConfig, err)
	}
	wcfg := cfg.Webhook
	wcfg.Logger = s.logger
	if cfg.Registerer != nil && wcfg.Observer == nil {
		obs, err := webhookmetrics.New(cfg.Registerer, b.Outbox, nil)
		if err != nil {
			return err
		}
		wcfg.Observer = obs
	}
	if s.disp, err = webhook.NewDispatcher(b.Outbox, b.Endpoints, client, &wcfg); err != nil {
		return fmt.Errorf("service: %w: %w", httpapi.ErrConfig, err)
	}
	isList := func(ctx context.Context, account, batch string) (bool, error) {
		_, err := s.queue.List(ctx, account, batch)
		if errors.Is(err, jobs.ErrNotFound) || errors.Is(err, jobs.ErrNoLists) {
			return false, nil
		}
		return err == nil, err
	}
	s.events, err = jobevents.New(b.Endpoints, &jobevents.Config{Dispatcher: s.disp, IsList: isList})
	return err
}

// buildPool builds the workers, unless this instance runs none: each
// completed job is counted in the usage and announced to webhooks.
func (s *Service) buildPool() error {
	cfg := s.cfg
	if cfg.Workers < 0 {
		return nil
	}
	pcfg := cfg.Pool
	pcfg.Workers = cfg.Workers
	pcfg.Logger = s.logger
	if pcfg.Canary == nil {
		// The workers tell a DNS outage from a domain of its own that
		// does not answer by asking the nameservers the readiness
		// question.
		if p, ok := s.validator.(jobs.NameserverPinger); ok {
			pcfg.Canary = p.PingNameservers
		}
	}
	hostHook := cfg.Pool.OnComplete
	pcfg.OnComplete = func(ctx context.Context, j jobs.Job) {
		if s.usage != nil && j.Result != nil {
			if err := s.usage.AddUsage(ctx, j.AccountID, j.CompletedAt, string(j.Result.Confidence.Status), 1); err != nil {
				s.logger.WarnContext(ctx, "usage count", "job", j.ID, "err", err)
			}
		}
		if s.dash != nil {
			s.dash.BatchProgress(ctx, j)
		}
		if hostHook != nil {
			hostHook(ctx, j)
		}
	}
	// The events are in the outbox once the job completes: the source
	// builds them and wakes the dispatcher to deliver them now rather
	// than at its next poll.
	s.events.Attach(&pcfg)
	// A plan's concurrent jobs bound its accounts over every instance
	// sharing the backend.
	if pcfg.AccountConcurrency == nil {
		pcfg.AccountConcurrency = planConcurrency(cfg.API.Plans, s.backend.Accounts)
	}
	if pcfg.AccountSlots == nil {
		pcfg.AccountSlots = s.backend.AccountSlots
	}
	var err error
	if s.pool, err = jobs.NewPool(s.queue, s.validator, &pcfg); err != nil {
		return fmt.Errorf("service: %w: %w", httpapi.ErrConfig, err)
	}
	return nil
}

// buildAPI builds the API handler on what the steps before built, and
// registers the operational metrics; it returns the API's configuration,
// which the console shares.
func (s *Service) buildAPI() (httpapi.Config, error) {
	cfg, b := s.cfg, s.backend
	acfg := cfg.API
	if err := s.setupSeller(&acfg); err != nil {
		return acfg, err
	}
	acfg.Usage = s.usage
	if acfg.Audit == nil {
		acfg.Audit = b.Audit
	}
	acfg.Logger = s.logger
	acfg.Registerer = cfg.Registerer
	acfg.Webhooks = b.Endpoints
	acfg.WebhookOutbox = b.Outbox
	acfg.WebhookSender = s.disp
	acfg.EndpointChanged = s.events.Forget
	if acfg.RateLimiter == nil {
		// The backend's, shared by every instance; else one for this
		// process, shared by the API and the console.
		acfg.RateLimiter = b.Limiter
		if acfg.RateLimiter == nil {
			acfg.RateLimiter = ratelimit.NewMemory(acfg.Now)
		}
	}
	if acfg.Workbooks == nil {
		// One gate for the API and the console, counting each account's
		// workbooks in the backend, across instances.
		acfg.Workbooks = httpapi.NewWorkbookGate(httpapi.WorkbookLimits{Slots: b.AccountSlots, Logger: s.logger})
	}
	var err error
	if s.api, err = httpapi.NewHandler(s.validator, s.ledger, s.queue, b.Accounts, &acfg); err != nil {
		return acfg, err
	}
	if cfg.Registerer != nil {
		if err := cfg.Registerer.Register(newOpsCollector(s.validator, s.queue, s.pool)); err != nil {
			return acfg, fmt.Errorf("service: register metrics: %w", err)
		}
	}
	return acfg, nil
}

// buildMux routes the API behind the host's middleware, the console when
// configured, the probes and the metrics.
func (s *Service) buildMux(acfg httpapi.Config) error {
	cfg := s.cfg
	// Wrap from the last middleware in, so the first is outermost.
	var h http.Handler = s.api
	for i := len(cfg.Middleware) - 1; i >= 0; i-- {
		if mw := cfg.Middleware[i]; mw != nil {
			h = mw(h)
		}
	}
	s.mux = http.NewServeMux()
	s.mux.Handle("/", h)
	if cfg.Dashboard != nil {
		if err := s.mountDashboard(*cfg.Dashboard, acfg); err != nil {
			return err
		}
	}
	s.mux.HandleFunc("GET /healthz", healthz)
	s.mux.HandleFunc("GET /readyz", s.readyz)
	if cfg.Gatherer != nil {
		s.mux.Handle("GET /metrics", promhttp.HandlerFor(cfg.Gatherer, promhttp.HandlerOpts{}))
	}
	return nil
}

// setupSeller builds the Stripe seller when configured and hands it to
// the API, with the return addresses of the console's billing page.
func (s *Service) setupSeller(acfg *httpapi.Config) error {
	cfg := s.cfg
	if cfg.Stripe == nil {
		return nil
	}
	if s.backend.Billing == nil {
		return fmt.Errorf("service: %w: selling credits needs a backend that records checkouts", httpapi.ErrConfig)
	}
	sc := *cfg.Stripe
	sc.Logger = cmp.Or(sc.Logger, s.logger)
	if ps, ok := s.backend.Accounts.(store.PlanSetter); ok && sc.Accounts == nil {
		sc.Accounts = ps
	}
	seller, err := stripecheckout.New(s.backend.Billing, s.ledger, &sc)
	if err != nil {
		return fmt.Errorf("service: %w: %w", httpapi.ErrConfig, err)
	}
	s.seller = seller
	acfg.Seller = seller
	if acfg.CheckoutSuccessURL == "" || acfg.CheckoutCancelURL == "" {
		origin := strings.TrimSuffix(cfg.PublicURL, "/")
		if origin == "" {
			return fmt.Errorf("service: %w: Stripe needs PublicURL, or the API's CheckoutSuccessURL and CheckoutCancelURL", httpapi.ErrConfig)
		}
		page := origin + dashboard.DefaultPrefix + "/billing"
		if cfg.Dashboard != nil && cfg.Dashboard.Prefix != "" {
			page = origin + strings.TrimSuffix(cfg.Dashboard.Prefix, "/") + "/billing"
		}
		acfg.CheckoutSuccessURL = cmp.Or(acfg.CheckoutSuccessURL, page+"?checkout={CHECKOUT_SESSION_ID}")
		acfg.CheckoutCancelURL = cmp.Or(acfg.CheckoutCancelURL, page+"?canceled=1")
	}
	return nil
}

// mountDashboard builds the console over the service's parts and serves
// it, the demo, and a redirect from /.
func (s *Service) mountDashboard(dc dashboard.Config, api httpapi.Config) error {
	b := s.backend
	if b.Passwords == nil || b.Sessions == nil || b.Tokens == nil {
		return fmt.Errorf("service: %w: the dashboard needs a backend that keeps passwords, sessions and tokens", httpapi.ErrConfig)
	}
	dc.Validator, dc.Usage = s.validator, s.usage
	dc.Endpoints, dc.Outbox, dc.Sender = b.Endpoints, b.Outbox, s.disp
	dc.EndpointChanged = s.events.Forget
	dc.Logger = s.logger
	if dc.Notices == nil {
		dc.Notices = b.Notices
	}
	if s.seller != nil && dc.Seller == nil && s.cfg.PublicURL != "" {
		dc.Seller = s.seller
		dc.CheckoutReturnURL = strings.TrimSuffix(s.cfg.PublicURL, "/") + strings.TrimSuffix(cmp.Or(dc.Prefix, dashboard.DefaultPrefix), "/") + "/billing"
	}
	if dc.Team == nil {
		dc.Team = b.Team
	}
	if dc.Audit == nil {
		dc.Audit = b.Audit
	}
	if dc.TwoFactor == nil {
		dc.TwoFactor = b.TwoFactor
	}
	if dc.Plans == nil {
		dc.Plans = api.Plans
	}
	if dc.OpenAPI == nil {
		dc.OpenAPI = s.api.OpenAPI()
	}
	if dc.ClientIP == nil {
		dc.ClientIP = api.ClientIP
	}
	if dc.Limiter == nil {
		dc.Limiter = api.RateLimiter
	}
	if dc.Workbooks == nil {
		dc.Workbooks = api.Workbooks
	}
	if dc.WebhookTestLimit == (ratelimit.Limit{}) {
		dc.WebhookTestLimit = api.WebhookTestLimit
	}
	if dc.Lists == nil {
		dc.Lists = api.Lists
	}
	if dc.MaxListUploads == 0 {
		dc.MaxListUploads = api.MaxListUploads
	}
	dc.MaxListUploadsPerNetwork = cmp.Or(dc.MaxListUploadsPerNetwork, api.MaxListUploadsPerNetwork)
	dc.ListReadWindow = cmp.Or(dc.ListReadWindow, api.ListReadWindow)
	dc.ListReadMinBytes = cmp.Or(dc.ListReadMinBytes, api.ListReadMinBytes)
	dc.ListMaxDuration = cmp.Or(dc.ListMaxDuration, api.ListMaxDuration)
	dc.ListHealthyRate = cmp.Or(dc.ListHealthyRate, api.ListHealthyRate)
	dc.ListEvictAfter = cmp.Or(dc.ListEvictAfter, api.ListEvictAfter)
	d, err := dashboard.New(dashboard.Storage{Accounts: b.Accounts, Passwords: b.Passwords, Sessions: b.Sessions, Tokens: b.Tokens}, s.ledger, s.queue, &dc)
	if err != nil {
		return fmt.Errorf("service: %w", err)
	}
	s.dash = d
	prefix := strings.TrimSuffix(cmp.Or(dc.Prefix, dashboard.DefaultPrefix), "/")
	s.mux.Handle(prefix+"/", d.Handler())
	s.mux.Handle("GET /demo", d.Demo())
	s.mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, prefix+"/", http.StatusFound)
	})
	return nil
}

func healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	io.WriteString(w, "ok\n")
}

// readyTimeout bounds each check of GET /readyz.
const readyTimeout = 2 * time.Second

// readyz serves GET /readyz: 200 when the backend answers (and, for one
// that can tell, has not lost its data) and the service is not shutting
// down; 503 naming what does not otherwise. It fails only for what is
// this instance's own: the DNS is shared by every instance, so its state
// (no nameserver answers, nameservers that deny names that exist, the
// workers paused for it) is reported in lines starting "dns:" without
// failing readiness, unless [Config.ReadinessNeedsDNS]. Lines starting
// "warning:" name what an operator should fix without failing readiness
// (a Redis server without persistence). /healthz stays a liveness probe.
func (s *Service) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
	defer cancel()
	var problems []string
	if s.stopping.Load() {
		problems = append(problems, "shutting down")
	}
	if _, err := s.backend.Accounts.GetAccount(ctx, "00000000-0000-0000-0000-000000000000"); err != nil && !errors.Is(err, store.ErrNotFound) {
		problems = append(problems, "backend: unavailable")
		s.logger.WarnContext(ctx, "readyz: backend", "err", err)
	}
	var notes []string
	if hc := s.backend.Health; hc != nil && len(problems) == 0 {
		n, err := hc.CheckHealth(ctx)
		switch {
		case errors.Is(err, store.ErrDataLost):
			problems = append(problems, "backend: store lost its data")
			s.logger.ErrorContext(ctx, "readyz: backend", "err", err)
		case err != nil:
			problems = append(problems, "backend: unavailable")
			s.logger.WarnContext(ctx, "readyz: backend", "err", err)
		}
		notes = n
	}
	var dnsLines []string
	if p, ok := s.validator.(jobs.NameserverPinger); ok {
		if err := p.PingNameservers(ctx); err != nil {
			line := "dns: no nameserver answers; validations are UNKNOWN (dns_timeout) until one does"
			if errors.Is(err, emailcheck.ErrResolverUntrusted) {
				line = "dns: the nameservers deny names that exist; no address is judged INVALID_DOMAIN on their answers (dns_untrusted) until they answer truthfully"
			}
			dnsLines = append(dnsLines, line)
			s.logger.WarnContext(ctx, "readyz: dns", "err", err)
		}
	}
	// Paused only when no nameserver answers the canary's question: an
	// address whose own domain does not answer never makes it so.
	if s.pool != nil && s.pool.DNSDown() {
		dnsLines = append(dnsLines, "dns: workers paused until the nameservers answer; batches resume then")
	}
	if s.cfg.ReadinessNeedsDNS {
		problems = append(problems, dnsLines...)
		dnsLines = nil
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if len(problems) > 0 {
		w.WriteHeader(http.StatusServiceUnavailable)
		for _, p := range problems {
			io.WriteString(w, p+"\n")
		}
	} else {
		io.WriteString(w, "ready\n")
	}
	// Conditions to know about that do not stop this instance serving.
	for _, l := range dnsLines {
		io.WriteString(w, l+"\n")
	}
	for _, n := range notes {
		io.WriteString(w, "warning: "+n+"\n")
	}
}

// Mux is the service's root handler: the API (wrapped in the middleware)
// at /, GET /healthz, and GET /metrics when a Gatherer was configured.
// The host may register routes of its own on it before serving; a more
// specific pattern wins over the API's "/".
func (s *Service) Mux() *http.ServeMux { return s.mux }

// Handler returns the API handler alone, without middleware, for a host
// that mounts it in a mux of its own.
func (s *Service) Handler() *httpapi.Handler { return s.api }

// Backend returns the storage the service runs on.
func (s *Service) Backend() *backend.Backend { return s.backend }

// Validator returns the validator of the API and the workers.
func (s *Service) Validator() jobs.Validator { return s.validator }

// Ledger returns the credit ledger.
func (s *Service) Ledger() *credits.Ledger { return s.ledger }

// Queue returns the job queue.
func (s *Service) Queue() *jobs.Queue { return s.queue }

// Pool returns the worker pool, or nil when Config.Workers is negative.
func (s *Service) Pool() *jobs.Pool { return s.pool }

// Dispatcher returns the webhook dispatcher.
func (s *Service) Dispatcher() *webhook.Dispatcher { return s.disp }

// Run runs the worker pool and the webhook dispatcher until ctx ends, then
// stops them in order and closes the service (see the package doc). It
// serves no HTTP: use it when the host serves [Service.Mux] or
// [Service.Handler] itself, and cancel ctx only after the host's server
// has shut down.
func (s *Service) Run(ctx context.Context) error {
	return s.run(ctx, nil, nil)
}

// Serve serves [Service.Mux] on ln and runs the worker pool and the
// webhook dispatcher until ctx ends or the server fails; then it stops
// accepting, finishes the requests in flight while the pool drains, stops
// the dispatcher and closes the service and ln. It returns nil after a
// clean shutdown.
func (s *Service) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           s.mux,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(s.logger.Handler(), slog.LevelWarn),
	}
	return s.run(ctx, srv, ln)
}

func (s *Service) run(ctx context.Context, srv *http.Server, ln net.Listener) (runErr error) {
	defer func() { runErr = errors.Join(runErr, s.Close()) }()

	// The pool and the dispatcher run on contexts of their own, cancelled
	// one after the other once ctx ends, so that the pool drains rather
	// than stops mid-job and the dispatcher delivers after the last job's
	// event is written.
	poolCtx, stopPool := context.WithCancel(context.WithoutCancel(ctx))
	defer stopPool()
	dispCtx, stopDisp := context.WithCancel(context.WithoutCancel(ctx))
	defer stopDisp()

	poolDone := make(chan struct{})
	if s.pool != nil {
		go func() {
			defer close(poolDone)
			if err := s.pool.Run(poolCtx); err != nil {
				s.logger.Error("worker pool stopped", "err", err)
			}
		}()
	} else {
		close(poolDone)
	}
	dispDone := make(chan struct{})
	go func() {
		defer close(dispDone)
		if err := s.disp.Run(dispCtx); err != nil {
			s.logger.Error("webhook dispatcher stopped", "err", err)
		}
	}()
	usageCtx, stopUsage := context.WithCancel(context.WithoutCancel(ctx))
	defer stopUsage()
	usageDone := make(chan struct{})
	if s.buffer != nil {
		go func() {
			defer close(usageDone)
			interval := cmp.Or(s.cfg.UsageFlushInterval, DefaultUsageFlushInterval)
			warn := func(err error) { s.logger.Warn("usage counts not written; kept for the next flush", "err", err) }
			if err := s.buffer.Run(usageCtx, interval, warn); err != nil {
				s.logger.Error("usage counts lost at shutdown", "err", err)
			}
		}()
	} else {
		close(usageDone)
	}
	// The mail of finished batches, on the dispatcher's schedule: it
	// stops with it, and a notice it holds then is claimed again by
	// another instance once its lease ends.
	noticesDone := make(chan struct{})
	if s.dash != nil {
		go func() {
			defer close(noticesDone)
			s.dash.RunNotices(dispCtx)
		}()
	} else {
		close(noticesDone)
	}
	serveErr := make(chan error, 1)
	if srv != nil {
		go func() { serveErr <- srv.Serve(ln) }()
		s.logger.Info("listening", "addr", ln.Addr().String(), "workers", s.workers())
	}

	select {
	case <-ctx.Done():
		s.stopping.Store(true)
		s.logger.Info("shutting down")
	case err := <-serveErr:
		runErr = fmt.Errorf("serve: %w", err)
	}

	// 1. Stop accepting and finish the requests in flight while the pool
	// drains.
	stopPool()
	if srv != nil {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.ShutdownTimeout)
		if err := srv.Shutdown(sctx); err != nil {
			s.logger.Warn("requests still in flight at the shutdown deadline", "err", err)
			srv.Close()
			runErr = errors.Join(runErr, fmt.Errorf("shutdown: %w", err))
		}
		cancel()
	}
	select {
	case <-poolDone:
		if s.pool != nil {
			s.logger.Info("worker pool drained", "completed", s.pool.Completed())
		}
	case <-time.After(s.cfg.DrainTimeout):
		s.logger.Warn("worker pool still draining at the deadline; its leases will expire and be rescued")
		runErr = errors.Join(runErr, errors.New("service: worker pool did not drain in time"))
	}

	// 2. Then the dispatcher: it leases nothing more, finishes the
	// requests in flight and records their outcome. Undelivered events
	// stay in the outbox for the next instance.
	stopDisp()
	select {
	case <-dispDone:
		s.logger.Info("webhook dispatcher stopped")
	case <-time.After(s.cfg.DispatchStopTimeout):
		s.logger.Warn("webhook dispatcher still delivering at the deadline; its leases will expire and be retried")
		runErr = errors.Join(runErr, errors.New("service: webhook dispatcher did not stop in time"))
	}
	<-noticesDone
	// 3. The usage counts of the last requests and jobs are written.
	stopUsage()
	<-usageDone
	// 4. The deferred Close releases the validator and the backend.
	return runErr
}

func (s *Service) workers() int {
	if s.pool == nil {
		return 0
	}
	return cmp.Or(s.cfg.Workers, jobs.DefaultWorkers)
}

// Close releases the validator the service built and the backend. Run
// and Serve call it when they return; call it directly only for a
// Service that was never run. Only the first call does anything.
func (s *Service) Close() error {
	s.closeOnce.Do(func() {
		var errs []error
		if s.ownsV != nil {
			errs = append(errs, s.ownsV.Close())
		}
		errs = append(errs, s.backend.Close())
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}
