package httpapi_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// The served document repeats the request's Host and X-Forwarded-Proto
// in its servers entry, so a stranger choosing them gets a document
// pointing generated clients at a host of theirs. That answer is the
// stranger's alone only if no shared cache keeps it for others: a cache
// keyed on the path (nginx's proxy_cache_key names the upstream, not the
// Host a client sent) would hand it to every client after. The document
// is therefore never stored by a shared cache, whatever the Host.
func TestOpenAPINotCachedForOthers(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	for _, host := range []string{"api.example.org", "attacker.example"} {
		r := httptest.NewRequest("GET", "/openapi.json", nil)
		r.Host = host
		r.Header.Set("X-Forwarded-Proto", "http")
		rec := httptest.NewRecorder()
		f.checked.ServeHTTP(rec, r)
		if rec.Code != 200 {
			t.Fatalf("%s: status %d", host, rec.Code)
		}
		d := readDoc(t, rec.Body.Bytes())
		if want := "http://" + host; len(d.Servers) != 1 || d.Servers[0].URL != want {
			t.Fatalf("%s: servers %+v, want %s", host, d.Servers, want)
		}
		cc := rec.Header().Get("Cache-Control")
		if !strings.Contains(cc, "no-store") && !strings.Contains(cc, "private") {
			t.Errorf("Host %s: Cache-Control %q: a shared cache may keep servers %q for every client", host, cc, d.Servers[0].URL)
		}
	}
}

// A Host the server let through but that makes no URL (a lone bracket,
// colons alone) leaves the servers entry relative, as a quote or a slash
// does: the document never names a base URL a client cannot parse or
// that names another host than the one asked for.
func TestOpenAPIServersOddHosts(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	for _, host := range []string{
		"[::1", "::1]", "a]b", ":", "::::", "[]", "a:b:c", "good.com:80:90", "[::1]x", "good.com:",
		strings.Repeat("a", 255), strings.Repeat("a", 256), "xn--nxasmq6b.com", "GOOD.COM",
	} {
		r := httptest.NewRequest("GET", "/openapi.json", nil)
		r.Host = host
		rec := httptest.NewRecorder()
		f.checked.ServeHTTP(rec, r)
		if rec.Code != http.StatusOK {
			t.Fatalf("Host %q: status %d", host, rec.Code)
		}
		d := readDoc(t, rec.Body.Bytes())
		if len(d.Servers) != 1 {
			t.Fatalf("Host %q: servers %+v", host, d.Servers)
		}
		got := d.Servers[0].URL
		if strings.HasPrefix(got, "/") {
			continue
		}
		u, err := url.Parse(got)
		if err != nil || u.Host != host || u.Scheme != "http" || u.Path != "" {
			t.Errorf("Host %q: servers URL %q (%v) is not this host's origin", host, got, err)
		}
	}
}

// X-Forwarded-Proto as proxies send it: a scheme is case-insensitive
// ("HTTPS"), and a chain of proxies that append sends a list whose first
// entry is the client's ("https, http"). Read as http, the document would
// point generated clients at http:// and their API keys would cross the
// network in clear text before any redirect.
func TestOpenAPIForwardedProtoAsProxiesSendIt(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	for _, proto := range []string{"https", "HTTPS", "Https", "https, http", "https,http"} {
		r := httptest.NewRequest("GET", "/openapi.json", nil)
		r.Host = "api.example.org"
		r.Header.Set("X-Forwarded-Proto", proto)
		rec := httptest.NewRecorder()
		f.checked.ServeHTTP(rec, r)
		d := readDoc(t, rec.Body.Bytes())
		if len(d.Servers) != 1 || d.Servers[0].URL != "https://api.example.org" {
			t.Errorf("X-Forwarded-Proto %q: servers %+v, want https://api.example.org", proto, d.Servers)
		}
	}
}
