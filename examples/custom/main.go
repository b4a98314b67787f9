// Command custom is a validmail service binary of one's own: the whole
// service of package httpapi/service (API, batch workers, webhook
// delivery) on the store named by VALIDMAIL_STORE, with a route and a
// middleware of the host's. VALIDMAIL_DNS names DNS servers;
// VALIDMAIL_BOOTSTRAP_EMAIL creates an account at start and logs its
// first key; VALIDMAIL_STORE_INIT=true initialises a new Redis store (the
// first start of a deployment only: see storeurl.Options.Init).
//
//	VALIDMAIL_BOOTSTRAP_EMAIL=me@example.org go run ./examples/custom
//	curl -H 'x-api-key: KEY' 'http://localhost:8080/validate?email=jane@gmail.com'
//	curl http://localhost:8080/version
package main

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/httpapi/service"
	"github.com/validmail/validmail/store/storeurl"
	"github.com/validmail/validmail/webhook"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ln, err := net.Listen("tcp", cmp.Or(os.Getenv("ADDR"), ":8080"))
	if err == nil {
		err = run(ctx, ln, os.Getenv, logger)
	}
	if err != nil {
		logger.Error("custom", "err", err)
		os.Exit(1)
	}
}

// run serves on ln until ctx ends, configured by getenv.
func run(ctx context.Context, ln net.Listener, getenv func(string) string, logger *slog.Logger) error {
	b, err := storeurl.Open(ctx, getenv("VALIDMAIL_STORE"), &storeurl.Options{Logger: logger, Init: getenv("VALIDMAIL_STORE_INIT") == "true"})
	if err != nil {
		return err
	}
	svc, err := service.New(b, &service.Config{
		Logger:        logger,
		Checks:        &emailcheck.Config{Nameservers: list(getenv("VALIDMAIL_DNS"))},
		WebhookClient: webhook.ClientOptions{Allow: list(getenv("VALIDMAIL_WEBHOOK_ALLOW"))},
		Middleware:    []func(http.Handler) http.Handler{poweredBy},
	})
	if err != nil {
		b.Close()
		return err
	}
	if email := getenv("VALIDMAIL_BOOTSTRAP_EMAIL"); email != "" {
		p := service.BootstrapParams{Email: email, Key: getenv("VALIDMAIL_BOOTSTRAP_KEY")}
		if _, key, err := service.Bootstrap(ctx, b.Accounts, p); err != nil || key != "" {
			logger.Info("bootstrap", "email", email, "new_key", key, "err", err)
		}
	}
	svc.Mux().HandleFunc("GET /version", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "custom 1.0")
	})
	return svc.Serve(ctx, ln)
}

// poweredBy is the host's middleware: it marks every API response.
func poweredBy(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Powered-By", "custom")
		next.ServeHTTP(w, r)
	})
}

// list splits a comma-separated value; empty gives nil.
func list(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}
