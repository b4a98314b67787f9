package main

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/validmail/validmail/store"
)

// With no nameserver reachable, the binary stays ready (every instance
// shares the resolver: failing readiness would empty a load balancer) and
// says so in a dns: line; GET /validate answers 200 UNKNOWN. With
// -ready-needs-dns, readiness fails instead.
func TestNoDNSStaysReady(t *testing.T) {
	t.Parallel()
	// A loopback port nothing listens on: queries meet a refusal.
	ln, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.LocalAddr().String()
	ln.Close()
	for _, tt := range []struct {
		name  string
		extra []string
		ready int
	}{
		{"default", nil, http.StatusOK},
		{"ready-needs-dns", []string{"-ready-needs-dns"}, http.StatusServiceUnavailable},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			key := store.NewSecret()
			in := start(t, append([]string{"-dns", dead, "-workers", "0", "-bootstrap-email", "nodns@example.com", "-bootstrap-key", key}, tt.extra...)...)
			get := func(path string) (int, string) {
				t.Helper()
				req, _ := http.NewRequest("GET", in.base+path, nil)
				req.Header.Set("x-api-key", key)
				c := http.Client{Timeout: time.Minute}
				resp, err := c.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				body, _ := io.ReadAll(resp.Body)
				return resp.StatusCode, string(body)
			}
			if code, body := get("/readyz"); code != tt.ready || !strings.Contains(body, "dns: no nameserver answers") {
				t.Errorf("/readyz with no DNS: %d %q; want %d with a dns: line", code, body, tt.ready)
			}
			if code, body := get("/validate?email=jane.doe@gmail.com"); code != http.StatusOK || !strings.Contains(body, `"UNKNOWN"`) {
				t.Errorf("GET /validate with no DNS: %d %s; want 200 UNKNOWN", code, body)
			}
			in.stop()
		})
	}
}
