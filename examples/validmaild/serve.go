package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/httpapi"
	"github.com/validmail/validmail/jobs"
	"github.com/validmail/validmail/webhook"
	"github.com/validmail/validmail/webhook/jobevents"
)

// Shutdown bounds.
const (
	// shutdownTimeout bounds the wait for requests in flight.
	shutdownTimeout = 20 * time.Second
	// drainTimeout bounds the wait for the worker pool to finish the
	// validations in flight and hand its leases back.
	drainTimeout = 30 * time.Second
	// dispatchStopTimeout bounds the wait for the webhook dispatcher to
	// finish the deliveries in flight (each bounded by the client's
	// timeout) and record their outcome.
	dispatchStopTimeout = webhook.DefaultTimeout + 5*time.Second
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
	if len(args) > 0 && args[0] == "account" {
		return runAccount(ctx, args[1:], getenv, stdout, stderr)
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
	b, err := openBackend(ctx, cfg.Store, cfg.Workers, logger)
	if err != nil {
		return err
	}
	defer b.Close()
	logger.Info("store opened", "store", redactURL(cfg.Store), "kind", b.kind)

	v, err := emailcheck.New(&emailcheck.Config{Nameservers: cfg.DNS, Logger: logger})
	if err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	defer v.Close()

	ledger := credits.New(b.credits, &credits.Config{Logger: logger})
	queue, err := jobs.NewQueue(b.driver, ledger, &jobs.Config{Logger: logger})
	if err != nil {
		return err
	}

	var reg *prometheus.Registry
	if cfg.Metrics {
		reg = prometheus.NewRegistry()
		reg.MustRegister(
			collectors.NewGoCollector(),
			collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		)
	}

	// Webhooks: the pool writes one event per completed job to the outbox
	// (for accounts with an enabled endpoint) in the step that completes
	// the job; the dispatcher delivers the outbox. Every instance runs a
	// dispatcher, whatever its -workers: instances on one store share the
	// outbox through leases, and each needs one for POST
	// /api/v1/webhook/test.
	hooks := b.webhooks
	hookClient, err := webhook.NewClient(webhook.ClientOptions{Allow: cfg.WebhookAllow})
	if err != nil {
		return fmt.Errorf("%w: -webhook-allow: %w", errUsage, err)
	}
	dcfg := &webhook.Config{Logger: logger}
	if reg != nil {
		obs, err := httpapi.NewWebhookMetrics(reg, hooks, nil)
		if err != nil {
			return err
		}
		dcfg.Observer = obs
	}
	disp, err := webhook.NewDispatcher(hooks, hooks, hookClient, dcfg)
	if err != nil {
		return err
	}
	events, err := jobevents.New(hooks, nil)
	if err != nil {
		return err
	}

	hcfg := httpapi.Config{
		Validator:     v,
		Ledger:        ledger,
		Queue:         queue,
		Accounts:      b.accounts,
		Logger:        logger,
		RateLimit:     cfg.RateLimit,
		Webhooks:      hooks,
		WebhookOutbox: hooks,
		WebhookSender: disp,
		WebhookEvents: events,
	}
	if b.limiter != nil {
		hcfg.RateLimiter = b.limiter
	}
	if reg != nil {
		hcfg.Registerer = reg
	}
	api, err := httpapi.NewHandler(hcfg)
	if err != nil {
		return err
	}

	mux := http.NewServeMux()
	mux.Handle("/", api)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, "ok\n")
	})
	if reg != nil {
		mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	}

	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return err
	}
	defer ln.Close()
	if err := announceAccount(ctx, cfg, b, ln.Addr().String(), logger, stdout); err != nil {
		return err
	}
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}

	var pool *jobs.Pool
	if cfg.Workers > 0 {
		pool, err = jobs.NewPool(queue, v, &jobs.PoolConfig{
			Workers:  cfg.Workers,
			Logger:   logger,
			NewEvent: events.NewEvent,
			// The event is in the outbox once the job completes: deliver
			// it now rather than at the dispatcher's next poll.
			OnComplete: func(context.Context, jobs.Job) { disp.Notify() },
		})
		if err != nil {
			return err
		}
	}

	// The pool and the dispatcher run on contexts of their own, cancelled
	// one after the other once ctx ends, so that the pool drains rather
	// than stops mid-job and the dispatcher finishes its requests in
	// flight after the last job's event is written.
	poolCtx, stopPool := context.WithCancel(context.WithoutCancel(ctx))
	defer stopPool()
	dispCtx, stopDisp := context.WithCancel(context.WithoutCancel(ctx))
	defer stopDisp()
	var wg sync.WaitGroup
	poolDone := make(chan struct{})
	if pool != nil {
		wg.Go(func() {
			defer close(poolDone)
			if err := pool.Run(poolCtx); err != nil {
				logger.Error("worker pool stopped", "err", err)
			}
		})
	} else {
		close(poolDone)
	}
	dispDone := make(chan struct{})
	wg.Go(func() {
		defer close(dispDone)
		if err := disp.Run(dispCtx); err != nil {
			logger.Error("webhook dispatcher stopped", "err", err)
		}
	})

	serveErr := make(chan error, 1)
	wg.Go(func() { serveErr <- srv.Serve(ln) })
	logger.Info("listening", "addr", ln.Addr().String(), "workers", cfg.Workers, "metrics", cfg.Metrics,
		"webhook_allow", cfg.WebhookAllow)

	var runErr error
	select {
	case <-ctx.Done():
		logger.Info("shutting down")
	case err := <-serveErr:
		runErr = fmt.Errorf("serve: %w", err)
	}

	// Stop accepting and finish the requests in flight while the pool
	// drains.
	stopPool()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		logger.Warn("requests still in flight at the shutdown deadline", "err", err)
		srv.Close()
		runErr = errors.Join(runErr, fmt.Errorf("shutdown: %w", err))
	}
	select {
	case <-poolDone:
	case <-time.After(drainTimeout):
		logger.Warn("worker pool still draining at the deadline; its leases will expire and be rescued")
		return errors.Join(runErr, errors.New("worker pool did not drain in time"))
	}
	if pool != nil {
		logger.Info("worker pool drained", "completed", pool.Completed())
	}

	// Then the dispatcher: it leases nothing more, finishes the requests
	// in flight and records their outcome. Undelivered events stay in the
	// outbox for the next instance to run.
	stopDisp()
	select {
	case <-dispDone:
		logger.Info("webhook dispatcher stopped")
	case <-time.After(dispatchStopTimeout):
		logger.Warn("webhook dispatcher still delivering at the deadline; its leases will expire and be retried")
		return errors.Join(runErr, errors.New("webhook dispatcher did not stop in time"))
	}
	wg.Wait()
	logger.Info("stopped")
	return runErr
}

// announceAccount creates the bootstrap account and key when asked, or the
// demo account on a memory store, and prints a new key to stdout with a
// curl command line for the service listening at addr. Keys are
// never logged.
func announceAccount(ctx context.Context, cfg config, b *backend, addr string, logger *slog.Logger, stdout io.Writer) error {
	email := cfg.BootstrapEmail
	if email == "" {
		if b.shared() {
			return nil
		}
		email = demoEmail
	}
	acct, secret, err := bootstrap(ctx, b.accounts, email, cfg.BootstrapCredits, cfg.BootstrapKey)
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
