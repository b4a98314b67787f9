package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// runHealthcheck runs "validmaild healthcheck": it asks the service
// listening on -addr (VALIDMAIL_ADDR, as the service reads it) for -path
// and exits 0 on 200, 1 otherwise, so that a container image without a
// shell or curl can carry its own health check (compose's healthcheck).
func runHealthcheck(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := newFlagSet("validmaild healthcheck", stderr)
	addr := fs.String("addr", ":8080", "the service's listen `address`, as -addr gives it")
	path := fs.String("path", "/healthz", "the `path` to ask: /healthz (the process serves) or /readyz (it can serve requests)")
	timeout := fs.Duration("timeout", 3*time.Second, "the longest wait for the answer")
	if err := parseFlags(fs, args, func(name string) string {
		if name == envName("addr") {
			return getenv(name) // the service's own
		}
		return ""
	}); err != nil {
		return err
	}
	if fs.NArg() > 0 || !strings.HasPrefix(*path, "/") || *timeout <= 0 {
		fs.Usage()
		return fmt.Errorf("%w: healthcheck takes -addr, -path (starting with /) and a positive -timeout", errUsage)
	}
	host, port, err := net.SplitHostPort(*addr)
	if err != nil {
		return fmt.Errorf("%w: -addr %q: %v", errUsage, *addr, err)
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+net.JoinHostPort(host, port)+*path, nil)
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s: %s", *path, resp.Status, strings.TrimSpace(string(body)))
	}
	fmt.Fprintf(stdout, "%s: %s", *path, body)
	return nil
}
