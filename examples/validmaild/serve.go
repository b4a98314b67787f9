package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/emailcheck/smtpprobe"
	"github.com/validmail/validmail/httpapi"
	"github.com/validmail/validmail/httpapi/dashboard"
	"github.com/validmail/validmail/httpapi/dashboard/mail"
	"github.com/validmail/validmail/httpapi/service"
	"github.com/validmail/validmail/jobs"
	"github.com/validmail/validmail/store/backend"
	"github.com/validmail/validmail/store/storeurl"
	"github.com/validmail/validmail/webhook"
)

// demoEmail is the account created on a memory store started without
// -bootstrap-email.
const demoEmail = "demo@example.com"

// run runs validmaild with the command-line arguments args (without the
// program name) until ctx ends, then shuts down gracefully and returns nil.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runEnv(ctx, args, os.Getenv, stdout, stderr)
}

// runEnv is run with the environment read through getenv.
func runEnv(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		switch args[0] {
		case "account":
			return runAccount(ctx, args[1:], getenv, os.Stdin, stdout, stderr)
		case "key":
			return runKey(ctx, args[1:], getenv, stdout, stderr)
		case "migrate":
			return runMigrate(ctx, args[1:], getenv, stderr)
		case "healthcheck":
			return runHealthcheck(ctx, args[1:], getenv, stdout, stderr)
		}
	}
	cfg, err := parseServeConfig(args, getenv, stderr)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: cfg.LogLevel}))
	return serve(ctx, cfg, logger, stdout)
}

// serve runs the service described by cfg until ctx ends.
func serve(ctx context.Context, cfg config, logger *slog.Logger, stdout io.Writer) error {
	b, err := waitForStore(ctx, cfg.StoreWait, logger, func() (*backend.Backend, error) {
		return openBackend(ctx, cfg.Store, cfg.Workers, cfg.StoreInit, cfg.SkipMigrate, logger)
	})
	if err != nil {
		return err
	}
	logger.Info("store opened", "store", storeurl.Redact(cfg.Store), "kind", b.Name)

	scfg, reg, err := serviceConfig(cfg, logger)
	if err != nil {
		b.Close()
		return err
	}
	var regOrNil prometheus.Registerer
	if reg != nil {
		regOrNil = reg
	}
	feed, stopFeed, err := startDisposableList(ctx, cfg, regOrNil, logger)
	if err != nil {
		b.Close()
		return err
	}
	defer stopFeed()
	scfg.Checks.DisposableFeed = feed
	svc, err := service.New(b, &scfg)
	if err != nil {
		b.Close()
		if errors.Is(err, httpapi.ErrConfig) {
			return fmt.Errorf("%w: %w", errUsage, err)
		}
		return err
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		svc.Close()
		return err
	}
	if err := announceAccount(ctx, cfg, b, ln.Addr().String(), logger, stdout); err != nil {
		ln.Close()
		svc.Close()
		return err
	}
	if reg != nil {
		msrv, err := serveMetrics(cfg.MetricsAddr, reg, logger)
		if err != nil {
			ln.Close()
			svc.Close()
			return err
		}
		defer msrv.Close()
	}
	if cfg.PprofAddr != "" {
		psrv, err := servePprof(cfg.PprofAddr, logger)
		if err != nil {
			ln.Close()
			svc.Close()
			return err
		}
		defer psrv.Close()
	}
	pingNameservers(ctx, svc, cfg.DNS, logger)
	logger.Info("starting", "metrics", cfg.Metrics, "webhook_allow", cfg.WebhookAllow)
	err = svc.Serve(ctx, ln)
	logger.Info("stopped")
	return err
}

// serviceConfig returns the service's configuration from cfg: its
// checks, API, webhook client, and, when cfg asks for them, Stripe
// Checkout, the console with its SMTP relay, the SMTP prober and a
// metrics registry (also returned; nil without -metrics). A relay or a
// prober that cannot be set up is an error wrapping errUsage.
func serviceConfig(cfg config, logger *slog.Logger) (service.Config, *prometheus.Registry, error) {
	scfg := service.Config{
		Checks:  &emailcheck.Config{Nameservers: cfg.DNS, AllowPrivateMX: cfg.AllowPrivateMX},
		Logger:  logger,
		Workers: cmp.Or(cfg.Workers, -1), // -workers 0 runs none here
		API: httpapi.Config{RateLimit: cfg.RateLimit, ClientIP: clientIP(cfg.ClientIPHeader), AdminToken: cfg.AdminToken, Plans: cfg.Plans,
			MaxListUploads: cfg.ListUploads, MaxListUploadsPerNetwork: cfg.ListUploadsPerNetwork,
			ListHealthyRate: cfg.ListHealthyRate, ListMaxDuration: cfg.ListMaxDuration},
		WebhookClient: webhook.ClientOptions{Allow: cfg.WebhookAllow},

		ReadinessNeedsDNS: cfg.ReadinessNeedsDNS,
	}
	if cfg.Stripe.SecretKey != "" {
		sc := cfg.Stripe
		scfg.Stripe, scfg.PublicURL = &sc, cfg.PublicURL
		logger.Info("credit packs are sold through Stripe Checkout", "packs", len(sc.Packs), "api", sc.APIURL,
			"webhook", strings.TrimSuffix(cfg.PublicURL, "/")+"/billing/stripe/webhook")
	}
	if cfg.Dashboard {
		scfg.Dashboard = &dashboard.Config{InsecureCookies: cfg.DashboardInsecureCookies, BillingURL: cfg.BillingURL, ListWaitTTL: cfg.ListWait}
		if cfg.Relay.Addr != "" {
			relay, err := mail.NewRelay(cfg.Relay)
			if err != nil {
				return service.Config{}, nil, fmt.Errorf("%w: %w", errUsage, err)
			}
			scfg.Dashboard.Mailer, scfg.Dashboard.BaseURL = relay, cfg.PublicURL
			logger.Info("console mail goes through the SMTP relay; sign-ups get their credits when they confirm their email", "relay", cfg.Relay.Addr, "from", relay.From())
		}
	}
	if cfg.SMTPProbe {
		pc := cfg.SMTP
		pc.Logger = logger
		pc.AllowPrivate = cfg.AllowPrivateMX
		p, err := smtpprobe.New(pc)
		if err != nil {
			return service.Config{}, nil, fmt.Errorf("%w: %w", errUsage, err)
		}
		scfg.Checks.Prober = p
		logger.Warn("SMTP mailbox probing is on", "helo", pc.HELO, "from", pc.MailFrom, "port", pc.Port)
	}
	var reg *prometheus.Registry
	if cfg.Metrics {
		reg = prometheus.NewRegistry()
		reg.MustRegister(
			collectors.NewGoCollector(),
			collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		)
		scfg.Registerer = reg
	}
	return scfg, reg, nil
}

// serveMetrics serves the metrics of reg at GET /metrics on addr, in a
// goroutine, and returns the server for the caller to close. Metrics
// listen on an address of their own: the API's listener is public, and
// /metrics would tell anyone about every customer.
func serveMetrics(addr string, reg *prometheus.Registry, logger *slog.Logger) (*http.Server, error) {
	mln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("-metrics-addr: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	msrv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go msrv.Serve(mln)
	logger.Info("metrics listening", "addr", mln.Addr().String())
	return msrv, nil
}

// servePprof serves the runtime profiles under GET /debug/pprof/ on
// addr, in a goroutine, and returns the server for the caller to close.
// Profiles listen on an address of their own, like the metrics: they
// show the process's memory and may slow it while taken.
func servePprof(addr string, logger *slog.Logger) (*http.Server, error) {
	pln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("-pprof: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	psrv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go psrv.Serve(pln)
	logger.Info("pprof listening", "addr", pln.Addr().String())
	return psrv, nil
}

// pingNameservers warns, when the service's validator can tell, that no
// DNS server of dns (as -dns set them) answers within three
// seconds: every validation is UNKNOWN until one does.
func pingNameservers(ctx context.Context, svc *service.Service, dns []string, logger *slog.Logger) {
	if p, ok := svc.Validator().(jobs.NameserverPinger); ok {
		pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		if err := p.PingNameservers(pctx); err != nil {
			logger.Warn("no DNS server answers: every validation will be UNKNOWN until one does", "dns", dns, "err", err)
		}
		cancel()
	}
}

// announceAccount creates the bootstrap account and key when asked, or the
// demo account on a memory store, and prints a new key to stdout with a
// curl command line for the service listening at addr. Keys are
// never logged.
func announceAccount(ctx context.Context, cfg config, b *backend.Backend, addr string, logger *slog.Logger, stdout io.Writer) error {
	email := cfg.BootstrapEmail
	if email == "" {
		if b.Shared {
			return nil
		}
		email = demoEmail
	}
	acct, secret, err := service.Bootstrap(ctx, b.Accounts, service.BootstrapParams{Email: email, Credits: cfg.BootstrapCredits, Key: cfg.BootstrapKey})
	if errors.Is(err, service.ErrKeyMalformed) {
		return fmt.Errorf("%w: -bootstrap-key: %w", errUsage, err)
	}
	if err != nil {
		return fmt.Errorf("bootstrap %s: %w", email, err)
	}
	logger.Info("account ready", "account_id", acct.ID, "email", acct.Email)
	if secret == "" {
		return nil
	}
	base := baseURL(addr)
	_, err = fmt.Fprintf(stdout, "Account %s (%s) is ready. Its API key, shown once:\n\n    %s\n\nTry it:\n\n    curl -H 'x-api-key: %s' '%s/validate?email=jane.doe@gmail.com'\n\n",
		acct.Email, acct.ID, secret, secret, base)
	return err
}

// baseURL returns the URL a local client reaches the listen address addr at.
func baseURL(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "http://" + addr
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "localhost"
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return "http://" + host + ":" + port
}

// clientIP returns the ClientIP of the API: the last value of header when
// set (the one the nearest proxy added), else the peer's address.
func clientIP(header string) func(*http.Request) string {
	if header == "" {
		return nil
	}
	return func(r *http.Request) string {
		vs := r.Header.Values(header)
		if len(vs) > 0 {
			parts := strings.Split(vs[len(vs)-1], ",")
			if ip := strings.TrimSpace(parts[len(parts)-1]); ip != "" {
				return ip
			}
		}
		host, _, err := net.SplitHostPort(r.RemoteAddr)
		if err != nil {
			return r.RemoteAddr
		}
		return host
	}
}
