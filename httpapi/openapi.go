package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// serverURLField is the servers entry of the embedded document, which
// openAPI replaces with the URL the document was asked for.
var serverURLField = []byte(`"url": "/"`)

// maxHostBytes bounds the Host a served document repeats.
const maxHostBytes = 255

// openAPI serves GET /openapi.json: the embedded document, its servers
// entry naming the origin the request reached (the scheme of the
// connection, or of X-Forwarded-Proto set by a proxy ending TLS) and the
// prefix the handler is mounted under, so that a generated client needs
// no base URL by hand. A Host that is not a plain host[:port] leaves the
// entry relative: the mount prefix alone. As the entry repeats what the
// client sent, the document is no-store: a shared cache keying it on the
// path alone would otherwise hand one client's Host to every other.
func (h *Handler) openAPI(w http.ResponseWriter, r *http.Request) {
	doc := servedDocument(openAPIDoc, serverURL(r))
	hd := w.Header()
	hd.Set("Content-Type", "application/json")
	hd.Set("Content-Length", strconv.Itoa(len(doc)))
	hd.Set("Vary", "X-Forwarded-Proto")
	hd["Cache-Control"] = headerNoStore
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		w.Write(doc)
	}
}

// servedDocument returns doc with its servers entry's URL replaced by url.
func servedDocument(doc []byte, url string) []byte {
	before, after, ok := bytes.Cut(doc, serverURLField)
	if !ok {
		return doc
	}
	quoted, _ := json.Marshal(url) // a string always encodes
	out := make([]byte, 0, len(doc)+len(quoted))
	out = append(out, before...)
	out = append(out, `"url": `...)
	out = append(out, quoted...)
	return append(out, after...)
}

// serverURL returns the base URL of the API the request reached: origin
// and mount prefix, or the prefix alone (at least "/") when the request's
// Host is not one to repeat.
func serverURL(r *http.Request) string {
	prefix := mountPrefix(r)
	if !plainHost(r.Host) {
		if prefix == "" {
			return "/"
		}
		return prefix
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	// A chain of proxies appends: the first entry is the client's. A
	// scheme is case-insensitive.
	proto, _, _ := strings.Cut(r.Header.Get("X-Forwarded-Proto"), ",")
	switch proto = strings.TrimSpace(proto); {
	case strings.EqualFold(proto, "https"):
		scheme = "https"
	case strings.EqualFold(proto, "http"):
		scheme = "http"
	}
	return scheme + "://" + r.Host + prefix
}

// plainHost reports whether host is a non-empty host name, IPv4 or
// bracketed IPv6 address with an optional port: letters, digits and
// '.', '-', ':', '[', ']' only, making a URL whose host it is.
func plainHost(host string) bool {
	if host == "" || len(host) > maxHostBytes {
		return false
	}
	for i := 0; i < len(host); i++ {
		c := host[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '.', c == '-', c == ':', c == '[', c == ']':
		default:
			return false
		}
	}
	u, err := url.Parse("http://" + host)
	return err == nil && u.Host == host
}
