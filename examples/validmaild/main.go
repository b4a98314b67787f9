// Command validmaild is the validmail service: the HTTP API of package
// httpapi on a memory, PostgreSQL or Redis store, with the worker pool that
// validates asynchronous batches and the dispatcher that delivers their
// webhook events running in the same process.
//
// With no flags it serves on :8080 with memory backends and prints a demo
// API key:
//
//	go run ./examples/validmaild
//
// Several instances share one deployment when they name the same
// PostgreSQL or Redis store:
//
//	validmaild -addr :8081 -store 'postgres://postgres@127.0.0.1:5432/test?sslmode=disable'
//	validmaild -addr :8082 -store 'postgres://postgres@127.0.0.1:5432/test?sslmode=disable'
//
// An account for a shared store is created with
//
//	validmaild account create -email jane@example.org -store redis://127.0.0.1:6379/0
//
// Each completed job of an account with a webhook endpoint (PUT
// /api/v1/webhook) is posted to it, signed. Deliveries reach public
// addresses only; -webhook-allow names the private ranges or hosts a
// deployment's receivers live on:
//
//	validmaild -webhook-allow 10.0.0.0/8,hooks.internal
//
// Every flag can also be set by an environment variable VALIDMAIL_<NAME>
// (VALIDMAIL_STORE, VALIDMAIL_BOOTSTRAP_KEY, VALIDMAIL_WEBHOOK_ALLOW, ...);
// a flag given on the command line wins. Run validmaild -help for the list.
// SIGINT or SIGTERM stops the service gracefully: it stops accepting
// connections, finishes the requests in flight, hands leased jobs back to
// the queue, lets the webhook deliveries in flight finish, and exits 0.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop() // a second signal ends the process at once
	}()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "validmaild:", err)
		os.Exit(exitCode(err))
	}
}
