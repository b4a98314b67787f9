package webhook_test

import (
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/validmail/validmail/webhook"
)

func TestIsPublicAddr(t *testing.T) {
	t.Parallel()
	tests := []struct {
		addr   string
		public bool
	}{
		{"8.8.8.8", true},
		{"1.1.1.1", true},
		{"93.184.216.34", true},
		{"2606:4700:4700::1111", true},
		{"2001:4860:4860::8888", true},
		{"::ffff:8.8.8.8", true},
		{"64:ff9b::808:808", true}, // NAT64 of 8.8.8.8
		{"2002:808:808::1", true},  // 6to4 of 8.8.8.8
		{"0.0.0.0", false},
		{"0.1.2.3", false},
		{"10.0.0.1", false},
		{"100.64.0.1", false},
		{"100.127.255.254", false},
		{"127.0.0.1", false},
		{"127.255.255.255", false},
		{"169.254.169.254", false},
		{"172.16.0.1", false},
		{"172.31.255.255", false},
		{"192.0.0.8", false},
		{"192.0.2.1", false},
		{"192.88.99.1", false},
		{"192.168.1.1", false},
		{"198.18.0.1", false},
		{"198.51.100.7", false},
		{"203.0.113.9", false},
		{"224.0.0.1", false},
		{"239.255.255.250", false},
		{"240.0.0.1", false},
		{"255.255.255.255", false},
		{"::", false},
		{"::1", false},
		{"::127.0.0.1", false},
		{"::ffff:127.0.0.1", false},
		{"::ffff:10.0.0.1", false},
		{"::ffff:169.254.169.254", false},
		{"64:ff9b::a00:1", false}, // NAT64 of 10.0.0.1
		{"64:ff9b:1::1", false},
		{"100::1", false},
		{"2001::1", false},
		{"2001:db8::1", false},
		{"2002:a00:1::1", false},
		{"2002:7f00:1::1", false},
		{"64:ff9b::7f00:1", false},
		{"2001:0:4136:e378:8000:63bf:80ff:fffe", false}, // Teredo, client 127.0.0.1
		{"3fff::1", false},
		{"fc00::1", false},
		{"fd12:3456::1", false},
		{"fe80::1", false},
		{"fe80::1%eth0", false},
		{"fec0::1", false},
		{"ff02::1", false},
	}
	for _, tc := range tests {
		if got := webhook.IsPublicAddr(netip.MustParseAddr(tc.addr)); got != tc.public {
			t.Errorf("IsPublicAddr(%s) = %v, want %v", tc.addr, got, tc.public)
		}
	}
	if webhook.IsPublicAddr(netip.Addr{}) {
		t.Error("the zero Addr is public")
	}
}

// hitCounter is a loopback server counting the requests it receives.
func hitCounter(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		if h != nil {
			h(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func TestClientRefusesNonPublic(t *testing.T) {
	t.Parallel()
	srv, hits := hitCounter(t, nil)
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	redirect, _ := hitCounter(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, srv.URL+"/private", http.StatusFound)
	})

	client, err := webhook.NewClient(webhook.ClientOptions{Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for _, target := range []string{
		srv.URL,                             // 127.0.0.1
		"http://127.0.0.1:" + port,          // same, by literal
		"http://10.0.0.1/",                  // private: refused before any packet
		"http://169.254.169.254/latest/",    // cloud metadata
		"http://[::1]:" + port,              // IPv6 loopback
		"http://[::ffff:127.0.0.1]:" + port, // IPv4-mapped loopback
		"http://localhost:" + port,          // a name resolving to loopback
		"http://0.0.0.0:" + port,            // unspecified, which Linux treats as local
		"http://[64:ff9b::7f00:1]:" + port,  // NAT64 of loopback
		"http://[2002:7f00:1::1]:" + port,   // 6to4 of loopback
		"http://[::127.0.0.1]:" + port,      // IPv4-compatible loopback
		redirect.URL,                        // the redirecting server itself is on loopback
	} {
		resp, err := client.Post(target, "application/json", strings.NewReader("{}"))
		if err == nil {
			resp.Body.Close()
			t.Errorf("POST %s succeeded (%d), want refusal", target, resp.StatusCode)
			continue
		}
		if !errors.Is(err, webhook.ErrAddressNotAllowed) {
			t.Errorf("POST %s: %v, want ErrAddressNotAllowed", target, err)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the loopback server received %d requests", n)
	}
}

func TestClientAllowlist(t *testing.T) {
	t.Parallel()
	srv, hits := hitCounter(t, nil)
	u, _ := url.Parse(srv.URL)
	port := u.Port()
	tests := []struct {
		name   string
		allow  []string
		target string
	}{
		{"loopback CIDR", []string{"127.0.0.0/8"}, srv.URL},
		{"single address", []string{"127.0.0.1"}, srv.URL},
		{"host name", []string{"LOCALHOST"}, "http://localhost:" + port},
		{"mapped address by IPv4 CIDR", []string{"127.0.0.0/8"}, "http://[::ffff:127.0.0.1]:" + port},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			client, err := webhook.NewClient(webhook.ClientOptions{Allow: tc.allow, Timeout: 2 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			resp, err := client.Get(tc.target)
			if err != nil {
				t.Fatalf("GET %s with allowlist %v: %v", tc.target, tc.allow, err)
			}
			resp.Body.Close()
		})
	}
	if hits.Load() != int32(len(tests)) {
		t.Errorf("server saw %d requests, want %d", hits.Load(), len(tests))
	}

	// An allowlist for one range does not open the others.
	client, _ := webhook.NewClient(webhook.ClientOptions{Allow: []string{"10.0.0.0/8", "receiver.test"}})
	if _, err := client.Get(srv.URL); !errors.Is(err, webhook.ErrAddressNotAllowed) {
		t.Errorf("loopback with only 10/8 allowed: %v, want ErrAddressNotAllowed", err)
	}
}

func TestClientIPv6LoopbackAllowed(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		t.Skip("no IPv6 loopback here:", err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	srv.Listener = ln
	srv.Start()
	defer srv.Close()
	client, _ := webhook.NewClient(webhook.ClientOptions{Allow: []string{"::1/128"}})
	resp, err := client.Get(srv.URL)
	if err != nil {
		t.Fatalf("GET %s with ::1 allowed: %v", srv.URL, err)
	}
	resp.Body.Close()
}

func TestClientDoesNotFollowRedirects(t *testing.T) {
	t.Parallel()
	private, privateHits := hitCounter(t, nil)
	redirect, _ := hitCounter(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, private.URL+"/internal", http.StatusTemporaryRedirect)
	})
	client, _ := webhook.NewClient(webhook.ClientOptions{Allow: []string{"127.0.0.1/32"}})
	resp, err := client.Post(redirect.URL, "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTemporaryRedirect {
		t.Errorf("status %d, want the 307 itself", resp.StatusCode)
	}
	if n := privateHits.Load(); n != 0 {
		t.Errorf("redirect target received %d requests", n)
	}
}

func TestClientIgnoresProxyEnvironment(t *testing.T) {
	// Not parallel: it sets environment variables.
	var proxied atomic.Int32
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { proxied.Add(1) }))
	defer proxy.Close()
	srv, hits := hitCounter(t, nil)
	t.Setenv("HTTP_PROXY", proxy.URL)
	t.Setenv("http_proxy", proxy.URL)
	t.Setenv("NO_PROXY", "")
	client, _ := webhook.NewClient(webhook.ClientOptions{Allow: []string{"127.0.0.1"}})
	resp, err := client.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if proxied.Load() != 0 || hits.Load() != 1 {
		t.Errorf("proxy saw %d, server %d; want 0 and 1", proxied.Load(), hits.Load())
	}
}

func TestClientSchemes(t *testing.T) {
	t.Parallel()
	client, _ := webhook.NewClient(webhook.ClientOptions{})
	for _, target := range []string{"ftp://example.com/x", "file:///etc/passwd", "gopher://example.com/"} {
		if _, err := client.Get(target); !errors.Is(err, webhook.ErrInvalidURL) {
			t.Errorf("GET %s: %v, want ErrInvalidURL", target, err)
		}
	}
}

func TestNewClientInvalidAllow(t *testing.T) {
	t.Parallel()
	for _, a := range []string{"10.0.0.0/33", "not a host", "1.2.3.4:80"} {
		if _, err := webhook.NewClient(webhook.ClientOptions{Allow: []string{a}}); err == nil {
			t.Errorf("NewClient accepted allowlist entry %q", a)
		}
	}
}

func TestValidateURL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		url string
		ok  bool
	}{
		{"https://hooks.example.com/validmail", true},
		{"http://203.0.113.5:8080/x?y=1", true}, // addresses are checked at dial time
		{"ftp://example.com/", false},
		{"https://", false},
		{"/relative", false},
		{"https://user:pass@example.com/", false},
		{"https://example.com/#frag", false},
		{"https://example.com/" + strings.Repeat("a", 2048), false},
		{"http://exa mple.com/", false},
	}
	for _, tc := range tests {
		err := webhook.ValidateURL(tc.url)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, webhook.ErrInvalidURL)) {
			t.Errorf("ValidateURL(%q) = %v, want ok=%v", tc.url, err, tc.ok)
		}
	}
}
