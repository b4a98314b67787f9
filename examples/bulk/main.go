// Command bulk validates a mailing list from the command line: it reads
// addresses as plain text or CSV, validates them in this process with the
// emailcheck library, and writes every row back with its verdict as CSV or
// JSON Lines, showing progress and a summary on stderr.
//
// Run "go run ./examples/bulk -help" for the flags and formats.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		// After the first signal, a second one ends the process at once.
		<-ctx.Done()
		stop()
	}()
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
