package httpapi_test

import (
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/httpapi"
	"github.com/validmail/validmail/jobs"
	"github.com/validmail/validmail/store/memstore"
	"github.com/validmail/validmail/webhook"
	"github.com/validmail/validmail/webhook/jobevents"
	"github.com/validmail/validmail/webhook/webhookmetrics"
)

// Mount the API under /email/ of an existing mux.
func ExampleNewHandler() {
	b := memstore.NewBackend()
	ledger := credits.New(b.Credits, nil)
	queue, err := jobs.NewQueue(b.Jobs, ledger, nil)
	if err != nil {
		log.Fatal(err)
	}
	v, err := emailcheck.New(nil)
	if err != nil {
		log.Fatal(err)
	}
	defer v.Close()
	h, err := httpapi.NewHandler(v, ledger, queue, b.Accounts, &httpapi.Config{})
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/email/", http.StripPrefix("/email", h))

	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest("GET", "/email/validate?email=jane@example.com", nil))
	fmt.Println(rec.Code, rec.Header().Get("Content-Type"))
	// Output: 401 application/problem+json
}

// Serve the webhook routes and deliver completed jobs: the memory
// store's outbox and endpoints, one dispatcher that both delivers the
// outbox and sends test pings, and an event source that the worker pool
// calls on each completion and the handler tells about endpoint changes.
//
// Package httpapi/service does this wiring, with the start and stop
// order, for a host that wants all of it.
func ExampleConfig_webhooks() {
	b := memstore.NewBackend()
	ledger := credits.New(b.Credits, nil)
	queue, err := jobs.NewQueue(b.Jobs, ledger, nil)
	if err != nil {
		log.Fatal(err)
	}
	v, err := emailcheck.New(nil)
	if err != nil {
		log.Fatal(err)
	}
	defer v.Close()

	reg := prometheus.NewRegistry()
	observer, err := webhookmetrics.New(reg, b.Outbox, nil)
	if err != nil {
		log.Fatal(err)
	}
	client, err := webhook.NewClient(webhook.ClientOptions{}) // public addresses only
	if err != nil {
		log.Fatal(err)
	}
	disp, err := webhook.NewDispatcher(b.Outbox, b.Endpoints, client, &webhook.Config{Observer: observer})
	if err != nil {
		log.Fatal(err)
	}
	// The source builds each completion's events and wakes the dispatcher
	// once they are written.
	events, err := jobevents.New(b.Endpoints, &jobevents.Config{Dispatcher: disp})
	if err != nil {
		log.Fatal(err)
	}
	var pcfg jobs.PoolConfig
	events.Attach(&pcfg)
	pool, err := jobs.NewPool(queue, v, &pcfg)
	if err != nil {
		log.Fatal(err)
	}
	_ = pool // the host runs pool.Run(ctx) and disp.Run(ctx)

	h, err := httpapi.NewHandler(v, ledger, queue, b.Accounts, &httpapi.Config{
		Registerer: reg,
		Webhooks:   b.Endpoints, WebhookOutbox: b.Outbox, WebhookSender: disp, EndpointChanged: events.Forget,
	})
	if err != nil {
		log.Fatal(err)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/api/v1/webhook", nil))
	fmt.Println(rec.Code)
	n, _ := testutil.GatherAndCount(reg, "validmail_webhook_outbox_pending")
	fmt.Println(n)
	// Output:
	// 401
	// 1
}
