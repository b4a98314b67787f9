// Command mount shows the validmail HTTP API mounted inside an existing
// application: the host keeps its own http.ServeMux, its own routes and its
// own middleware, and serves the API under /email/ with
//
//	mux.Handle("/email/", http.StripPrefix("/email", api))
//
// The service (package httpapi/service) runs on memory backends with the
// batch workers and webhook delivery in-process.
// Start it and call the API under the prefix with the key it prints:
//
//	go run ./examples/mount
//	curl -H 'x-api-key: KEY' 'http://localhost:8080/email/validate?email=jane@gmail.com'
//	curl http://localhost:8080/hello
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/httpapi/service"
	"github.com/validmail/validmail/store/memstore"
)

func main() {
	addr := flag.String("addr", ":8080", "listen address")
	dnsServers := flag.String("dns", "", "comma-separated DNS servers (host:port); default /etc/resolv.conf")
	flag.Parse()
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := serve(ctx, *addr, *dnsServers, logger); err != nil {
		logger.Error("mount", "err", err)
		os.Exit(1)
	}
}

// serve runs the host application on addr until ctx ends.
func serve(ctx context.Context, addr, dnsServers string, logger *slog.Logger) error {
	var ns []string
	if dnsServers != "" {
		ns = strings.Split(dnsServers, ",")
	}
	vm, err := newValidmail(ctx, ns, logger)
	if err != nil {
		return err
	}
	fmt.Printf("API key: %s\n", vm.key)

	// The service's workers and webhook dispatcher outlive the signal:
	// they are stopped (and drain) only after the host's server has
	// finished the requests in flight.
	svcCtx, stopService := context.WithCancel(context.WithoutCancel(ctx))
	svcDone := make(chan error, 1)
	go func() { svcDone <- vm.svc.Run(svcCtx) }()
	defer func() { stopService(); <-svcDone }()

	srv := &http.Server{Addr: addr, Handler: newApp(logger, vm.svc.Handler()), ReadHeaderTimeout: 10 * time.Second}
	shutdownDone := make(chan struct{})
	go func() {
		defer close(shutdownDone)
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	// ListenAndServe returns as soon as Shutdown starts; wait for it to
	// finish the requests in flight.
	<-shutdownDone
	return nil
}

// newApp is the host application: its own routes and middleware, with the
// validmail API mounted under /email/.
func newApp(logger *slog.Logger, api http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /hello", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "hello from the host application")
	})
	mux.Handle("/email/", http.StripPrefix("/email", api))
	return accessLog(logger, securityHeaders(mux))
}

// securityHeaders is the host's own middleware: it sets headers on every
// response, the API's included.
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("X-Frame-Options", "DENY")
		next.ServeHTTP(w, r)
	})
}

// statusRecorder remembers the status a handler wrote.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// accessLog is the host's own access log. It logs the path, never the
// query or the headers (which carry addresses and API keys).
func accessLog(logger *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(rec, r)
		logger.Info("host request", "method", r.Method, "path", r.URL.Path, "status", rec.status, "duration", time.Since(start))
	})
}

// validmail is the assembled service and the key of its one account.
type validmail struct {
	svc *service.Service
	key string
}

// newValidmail assembles the service on memory backends, with one account
// whose key it returns in key. The caller runs m.svc.Run, which closes it.
func newValidmail(ctx context.Context, nameservers []string, logger *slog.Logger) (*validmail, error) {
	svc, err := service.New(memstore.NewBackend(), &service.Config{
		Checks:  &emailcheck.Config{Nameservers: nameservers},
		Logger:  logger,
		Workers: 2,
	})
	if err != nil {
		return nil, err
	}
	_, key, err := service.Bootstrap(ctx, svc.Backend().Accounts, service.BootstrapParams{Email: "host@example.com"})
	if err != nil {
		svc.Close()
		return nil, err
	}
	return &validmail{svc: svc, key: key}, nil
}
