package apicheck_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/validmail/validmail/httpapi/internal/apicheck"
)

// doc describes GET /x: 200 {"a": string} with X-Request-Id, or CSV; and
// a Problem for everything else.
const doc = `{
  "openapi": "3.1.0",
  "info": {"title": "t", "version": "1"},
  "servers": [{"url": "/"}],
  "paths": {"/x": {"get": {"operationId": "getX", "responses": {
    "200": {"description": "ok",
      "headers": {"X-Request-Id": {"required": true, "schema": {"type": "string"}}},
      "content": {
        "application/json": {"schema": {"type": "object", "required": ["a"], "additionalProperties": false, "properties": {"a": {"type": "string"}}}},
        "text/csv": {"schema": {"type": "string"}}}}}}}},
  "components": {"schemas": {"Problem": {"type": "object", "required": ["code"], "properties": {"code": {"type": "string"}}}}}
}`

// recorder is a testing.TB that keeps what Errorf reports.
type recorder struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func (r *recorder) failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.errs) > 0
}

// answer returns a handler writing status, a Content-Type, an optional
// X-Request-Id and body.
func answer(status int, ctype string, requestID bool, body string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", ctype)
		if requestID {
			w.Header().Set("X-Request-Id", "r")
		}
		w.WriteHeader(status)
		io.WriteString(w, body)
	})
}

func TestChecks(t *testing.T) {
	tests := []struct {
		name, path string
		h          http.Handler
		only       bool // DocumentedOnly
		wantFail   bool
	}{
		{"as documented", "/x", answer(200, "application/json", true, `{"a":"b"}`), false, false},
		{"an extra field", "/x", answer(200, "application/json", true, `{"a":"b","c":1}`), false, true},
		{"a missing field", "/x", answer(200, "application/json", true, `{}`), false, true},
		{"a missing header", "/x", answer(200, "application/json", false, `{"a":"b"}`), false, true},
		{"an undocumented status", "/x", answer(418, "application/json", true, `{"a":"b"}`), false, true},
		{"an export", "/x", answer(200, "text/csv", true, "a,b\n"), false, false},
		{"an export without its header", "/x", answer(200, "text/csv", false, "a,b\n"), false, true},
		{"an undocumented path's problem", "/nowhere", answer(404, "application/problem+json", true, `{"code":"not_found"}`), false, false},
		{"an undocumented path's page", "/nowhere", answer(200, "text/html", false, `<p>`), false, true},
		{"an undocumented path skipped", "/nowhere", answer(200, "text/html", false, `<p>`), true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var n atomic.Int64
			c, err := apicheck.New([]byte(doc), &apicheck.Options{Count: &n, DocumentedOnly: tc.only})
			if err != nil {
				t.Fatal(err)
			}
			// Served directly.
			rec := &recorder{TB: t}
			c.Handler(rec, tc.h).ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", tc.path, nil))
			if rec.failed() != tc.wantFail {
				t.Errorf("Handler: failed %v, want %v: %v", rec.failed(), tc.wantFail, rec.errs)
			}
			// Through a server.
			srv := httptest.NewServer(tc.h)
			defer srv.Close()
			rec = &recorder{TB: t}
			resp, err := (&http.Client{Transport: c.Transport(rec, nil)}).Get(srv.URL + tc.path)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if rec.failed() != tc.wantFail {
				t.Errorf("Transport: failed %v, want %v: %v", rec.failed(), tc.wantFail, rec.errs)
			}
			want := httptest.NewRecorder()
			tc.h.ServeHTTP(want, httptest.NewRequest("GET", tc.path, nil))
			if string(body) != want.Body.String() {
				t.Errorf("Transport handed on %q, want %q", body, want.Body)
			}
			if wantN := map[bool]int64{true: 0, false: 2}[tc.only]; n.Load() != wantN {
				t.Errorf("counted %d responses, want %d", n.Load(), wantN)
			}
		})
	}
}

// A response passes through the checking handler as it is written.
func TestHandlerPassesThrough(t *testing.T) {
	c, err := apicheck.New([]byte(doc), nil)
	if err != nil {
		t.Fatal(err)
	}
	w := httptest.NewRecorder()
	big := strings.Repeat("a", 1<<20)
	c.Handler(t, answer(200, "application/json", true, `{"a":"`+big+`"}`)).ServeHTTP(w, httptest.NewRequest("GET", "/x", nil))
	if w.Code != 200 || w.Body.Len() != len(big)+8 || w.Header().Get("X-Request-Id") != "r" {
		t.Fatalf("passed %d, %d bytes, headers %v", w.Code, w.Body.Len(), w.Header())
	}
}
