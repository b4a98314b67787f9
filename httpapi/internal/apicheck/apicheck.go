// Package apicheck holds the API's responses to its OpenAPI document, for
// tests: a [Checker] validates a response's status, headers and body with
// kin-openapi's openapi3filter, and [Checker.Handler] and
// [Checker.Transport] put it in front of every response a test receives,
// whether it serves a handler directly or talks to a server. Only tests
// import it.
package apicheck

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
)

// MaxBody is the most bytes of a body kept for validation; a longer body
// has its status and headers checked, not its bytes. So do exports
// (CSV, JSON Lines), whose bodies the document describes as any text:
// they stream through unkept, so that a test of a large export measures
// the server, not its checker.
const MaxBody = 32 << 20

// isStream reports whether a response of this Content-Type is an export.
func isStream(contentType string) bool {
	for _, mt := range streamTypes {
		if strings.HasPrefix(contentType, mt) {
			return true
		}
	}
	return false
}

// streamTypes are the export media types, decoded as plain text.
var streamTypes = []string{"text/csv", "application/x-ndjson"}

// registerDecoders teaches openapi3filter the export media types, as
// plain strings. Its registry is the library's own, shared by the process.
var registerDecoders = sync.OnceFunc(func() {
	for _, mt := range streamTypes {
		openapi3filter.RegisterBodyDecoder(mt, openapi3filter.FileBodyDecoder)
	}
})

// Options adjust a [Checker].
type Options struct {
	// Count, when set, is added one for every response checked, so that a
	// test binary can tell how many it checked.
	Count *atomic.Int64
	// DocumentedOnly skips responses to paths the document does not
	// describe (a service's console, health and metrics routes); without
	// it such a response must still be a Problem, as the API's 404 is.
	DocumentedOnly bool
}

// Checker validates responses against one OpenAPI document. It is safe
// for concurrent use.
type Checker struct {
	doc    *openapi3.T
	router routers.Router
	opts   Options
}

// New loads doc. Its servers are ignored: requests are matched on their
// path alone, as a handler sees it below any mount prefix.
func New(doc []byte, o *Options) (*Checker, error) {
	registerDecoders()
	t, err := openapi3.NewLoader().LoadFromData(doc)
	if err != nil {
		return nil, fmt.Errorf("apicheck: load: %w", err)
	}
	if err := t.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("apicheck: invalid document: %w", err)
	}
	t.Servers = nil
	router, err := legacy.NewRouter(t)
	if err != nil {
		return nil, fmt.Errorf("apicheck: router: %w", err)
	}
	c := &Checker{doc: t, router: router}
	if o != nil {
		c.opts = *o
	}
	return c, nil
}

// Check validates the response (status, header, body) to r. A nil body
// with truncated set checks the status and headers alone.
// A HEAD is checked as the GET it stands for, without a body.
func (c *Checker) Check(r *http.Request, status int, header http.Header, body []byte, truncated bool) error {
	if r.Method == http.MethodHead {
		r = r.Clone(r.Context())
		r.Method, body, truncated = http.MethodGet, nil, true
	}
	route, params, err := c.router.FindRoute(r)
	if err != nil {
		if c.opts.DocumentedOnly {
			return nil
		}
		c.count()
		if truncated {
			return nil
		}
		// Unknown path or method: the body must still be a Problem.
		var v any
		if err := json.Unmarshal(body, &v); err != nil {
			return fmt.Errorf("undocumented route answered %d with a body that is not JSON: %w", status, err)
		}
		return c.doc.Components.Schemas["Problem"].Value.VisitJSON(v, openapi3.EnableJSONSchema2020())
	}
	c.count()
	opts := &openapi3filter.Options{
		IncludeResponseStatus: true,
		AuthenticationFunc:    openapi3filter.NoopAuthenticationFunc,
		ExcludeResponseBody:   truncated,
		MultiError:            true,
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: r, PathParams: params, Route: route, Options: opts},
		Status:                 status,
		Header:                 header,
		Options:                opts,
	}
	in.SetBodyBytes(body)
	return openapi3filter.ValidateResponse(r.Context(), in)
}

func (c *Checker) count() {
	if c.opts.Count != nil {
		c.opts.Count.Add(1)
	}
}

// Handler returns next with every response checked once it is written; a
// mismatch fails t (with Errorf, from whichever goroutine served it). The
// response passes through as it is written, flushes included.
func (c *Checker) Handler(t testing.TB, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tw := &teeWriter{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(tw, r)
		if err := c.Check(r, tw.status, w.Header(), tw.body.Bytes(), tw.truncated); err != nil {
			t.Errorf("%s %s → %d %.2000s\ndoes not match the OpenAPI document: %v", r.Method, r.URL, tw.status, tw.body.Bytes(), err)
		}
	})
}

// teeWriter passes a response through, keeping its status and (up to
// MaxBody) its body.
type teeWriter struct {
	http.ResponseWriter
	status    int
	wrote     bool
	body      bytes.Buffer
	truncated bool
}

func (w *teeWriter) WriteHeader(code int) {
	if !w.wrote && code >= 200 {
		w.status, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *teeWriter) Write(p []byte) (int, error) {
	if !w.wrote && isStream(w.Header().Get("Content-Type")) {
		w.truncated = true
	}
	w.wrote = true
	if !w.truncated {
		if w.body.Len()+len(p) > MaxBody {
			w.truncated = true
			w.body = bytes.Buffer{}
		} else {
			w.body.Write(p)
		}
	}
	return w.ResponseWriter.Write(p)
}

// Flush flushes the underlying writer, if it can.
func (w *teeWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *teeWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Transport returns base (http.DefaultTransport when nil) with every
// response checked: its body is read whole (up to MaxBody, beyond which
// the rest streams unchecked; an export streams unread) and handed on
// unchanged. A mismatch fails t with Errorf.
func (c *Checker) Transport(t testing.TB, base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return roundTripper(func(r *http.Request) (*http.Response, error) {
		resp, err := base.RoundTrip(r)
		if err != nil {
			return resp, err
		}
		if isStream(resp.Header.Get("Content-Type")) {
			if err := c.Check(r, resp.StatusCode, resp.Header, nil, true); err != nil {
				t.Errorf("%s %s → %d\ndoes not match the OpenAPI document: %v", r.Method, r.URL, resp.StatusCode, err)
			}
			return resp, nil
		}
		body, err := io.ReadAll(io.LimitReader(resp.Body, MaxBody+1))
		truncated := len(body) > MaxBody
		if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
			resp.Body.Close()
			return nil, err
		}
		if truncated {
			resp.Body = readCloser{io.MultiReader(bytes.NewReader(body), resp.Body), resp.Body}
		} else {
			resp.Body.Close()
			resp.Body = io.NopCloser(bytes.NewReader(body))
		}
		check := body
		if truncated {
			check = nil
		}
		if err := c.Check(r, resp.StatusCode, resp.Header, check, truncated); err != nil {
			t.Errorf("%s %s → %d %.2000s\ndoes not match the OpenAPI document: %v", r.Method, r.URL, resp.StatusCode, body, err)
		}
		return resp, nil
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// readCloser reads from one reader and closes another.
type readCloser struct {
	io.Reader
	io.Closer
}
