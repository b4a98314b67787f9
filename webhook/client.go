package webhook

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/validmail/validmail/emailcheck/netpolicy"
)

// DefaultTimeout bounds one delivery attempt, connection to last byte.
const DefaultTimeout = 15 * time.Second

// Errors returned by the client from [NewClient] and by [ValidateURL].
var (
	// ErrAddressNotAllowed reports a connection refused because the
	// resolved address is private, loopback, link-local or otherwise not
	// a public unicast address, and no allowlist entry covers it.
	ErrAddressNotAllowed = errors.New("webhook: address not allowed")
	// ErrInvalidURL reports an endpoint URL that is not an absolute
	// http or https URL with a host.
	ErrInvalidURL = errors.New("webhook: invalid endpoint URL")
)

// ClientOptions configures [NewClient]. The zero value refuses every
// non-public address and times out after DefaultTimeout.
type ClientOptions struct {
	// Allow lists exceptions to the address check: CIDR prefixes
	// ("127.0.0.0/8", "::1/128"), single addresses ("10.1.2.3") or host
	// names ("receiver.internal", matched case-insensitively against the
	// URL's host, which is then dialled without any address check).
	Allow []string
	// Timeout bounds a whole request. Zero means DefaultTimeout.
	Timeout time.Duration
	// Resolver resolves host names; nil means net.DefaultResolver. The
	// check runs on the address actually dialled, whatever resolved it.
	Resolver *net.Resolver
}

// IsPublicAddr reports whether a webhook may connect to addr without an
// allowlist entry: whether it is public by the rule the whole module
// shares, [netpolicy.IsPublic] (a global unicast address outside every
// special-purpose range; IPv4-mapped, IPv4-compatible, NAT64, 6to4 and
// Teredo addresses judged by the IPv4 address they carry).
func IsPublicAddr(addr netip.Addr) bool {
	return netpolicy.IsPublic(addr)
}

// policy decides which dials are allowed.
type policy struct {
	prefixes []netip.Prefix
	hosts    map[string]bool
}

func newPolicy(allow []string) (*policy, error) {
	p := &policy{hosts: map[string]bool{}}
	for _, a := range allow {
		a = strings.TrimSpace(a)
		if a == "" {
			continue
		}
		if pre, err := netip.ParsePrefix(a); err == nil {
			p.prefixes = append(p.prefixes, pre.Masked())
			continue
		}
		if addr, err := netip.ParseAddr(strings.Trim(a, "[]")); err == nil {
			p.prefixes = append(p.prefixes, netip.PrefixFrom(addr, addr.BitLen()))
			continue
		}
		if strings.ContainsAny(a, "/:[] ") {
			return nil, fmt.Errorf("webhook: invalid allowlist entry %q", a)
		}
		p.hosts[normalizeHost(a)] = true
	}
	return p, nil
}

func normalizeHost(h string) string {
	return strings.TrimSuffix(strings.ToLower(h), ".")
}

func (p *policy) allowedAddr(addr netip.Addr) bool {
	if IsPublicAddr(addr) {
		return true
	}
	addr = addr.WithZone("")
	for _, pre := range p.prefixes {
		if pre.Contains(addr) || (addr.Is4In6() && pre.Contains(addr.Unmap())) {
			return true
		}
	}
	return false
}

// control runs after name resolution, just before each connect: the
// address it sees is the one dialled, so a name that resolves to a
// public address at validation time and a private one later (DNS
// rebinding) is still refused.
func (p *policy) control(_ context.Context, network, address string, _ syscall.RawConn) error {
	switch network {
	case "tcp", "tcp4", "tcp6":
	default:
		return fmt.Errorf("%w: network %s", ErrAddressNotAllowed, network)
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: %s", ErrAddressNotAllowed, address)
	}
	if !p.allowedAddr(ap.Addr()) {
		return fmt.Errorf("%w: %s", ErrAddressNotAllowed, ap.Addr())
	}
	return nil
}

// NewClient returns an HTTP client for delivering webhooks to addresses
// chosen by customers. It refuses, at dial time, every address that
// [IsPublicAddr] rejects unless opts.Allow covers it; ignores proxy
// environment variables; never follows redirects (the 3xx response is
// returned as is); speaks only http and https; and gives up after
// opts.Timeout. It returns an error only for an invalid allowlist entry.
func NewClient(opts ClientOptions) (*http.Client, error) {
	pol, err := newPolicy(opts.Allow)
	if err != nil {
		return nil, err
	}
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	checked := &net.Dialer{
		Timeout:        timeout,
		KeepAlive:      30 * time.Second,
		Resolver:       opts.Resolver,
		ControlContext: pol.control,
	}
	unchecked := &net.Dialer{
		Timeout:   timeout,
		KeepAlive: 30 * time.Second,
		Resolver:  opts.Resolver,
	}
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(addr)
		if err == nil && len(pol.hosts) > 0 && pol.hosts[normalizeHost(host)] {
			return unchecked.DialContext(ctx, network, addr)
		}
		return checked.DialContext(ctx, network, addr)
	}
	tr := &http.Transport{
		Proxy:                 nil,
		DialContext:           dial,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		MaxIdleConnsPerHost:   8,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		ResponseHeaderTimeout: timeout,
	}
	return &http.Client{
		Transport: schemeGuard{tr},
		Timeout:   timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}, nil
}

// schemeGuard refuses every scheme but http and https before the
// transport sees the request.
type schemeGuard struct{ rt http.RoundTripper }

func (g schemeGuard) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL == nil || (r.URL.Scheme != "http" && r.URL.Scheme != "https") {
		if r.Body != nil {
			_ = r.Body.Close()
		}
		return nil, fmt.Errorf("%w: scheme must be http or https", ErrInvalidURL)
	}
	return g.rt.RoundTrip(r)
}

// ValidateURL checks the form of an endpoint URL before it is stored: an
// absolute http or https URL with a host, no user information and no
// fragment, at most 2,048 bytes. Addresses are checked only when a
// connection is made, by the client from [NewClient].
func ValidateURL(raw string) error {
	if len(raw) > 2048 {
		return fmt.Errorf("%w: longer than 2048 bytes", ErrInvalidURL)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidURL, err)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("%w: scheme must be http or https", ErrInvalidURL)
	case u.Hostname() == "":
		return fmt.Errorf("%w: no host", ErrInvalidURL)
	case u.User != nil:
		return fmt.Errorf("%w: user information is not allowed", ErrInvalidURL)
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return fmt.Errorf("%w: fragment is not allowed", ErrInvalidURL)
	}
	return nil
}
