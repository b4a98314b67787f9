package httpapi_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers/legacy"
)

// What the document lets a generated client send, the server takes: an
// Idempotency-Key of 255 characters (the document's maxLength, which
// JSON Schema counts in characters) is a key, also when its characters
// take more than one byte each. A client validating its requests against
// the document must not be refused invalid_body for a key it checked.
// So with a list's name (maxLength 200).
func TestTextBoundsAsDocumented(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	doc, err := openapi3.NewLoader().LoadFromData(f.h.OpenAPI())
	if err != nil {
		t.Fatal(err)
	}
	doc.Servers = nil
	router, err := legacy.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{strings.Repeat("k", 255), strings.Repeat("é", 255), strings.Repeat("é", 128)} {
		for i, tc := range []struct{ target, ctype, body string }{
			{"/validate/async", "application/json", `{"emails":["a@good.com"]}`},
			{"/api/v1/lists", "text/csv", "email\na@good.com\n"},
			// name is bounded alike: maxLength 200.
			{"/api/v1/lists?name=" + strings.Repeat("%C3%A9", 150), "text/csv", "email\nb@good.com\n"},
		} {
			r := httptest.NewRequest("POST", tc.target, strings.NewReader(tc.body))
			r.Header.Set("Content-Type", tc.ctype)
			// A key of its own per request, as long as key: the same key
			// with another list is rightly 422.
			key := string([]rune(key)[:len([]rune(key))-1]) + string(rune('a'+i))
			r.Header.Set("Idempotency-Key", key)
			route, params, err := router.FindRoute(r)
			if err != nil {
				t.Fatal(err)
			}
			in := &openapi3filter.RequestValidationInput{Request: r, PathParams: params, Route: route,
				Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, ExcludeRequestBody: true}}
			if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil {
				continue // the document refuses it too
			}
			resp := f.do(t, req{method: "POST", target: tc.target, key: f.key, body: tc.body,
				header: map[string]string{"Content-Type": tc.ctype, "Idempotency-Key": key}})
			if resp.Code != 202 {
				t.Errorf("%.40s… with a key of %d characters (%d bytes), both as the document allows: %d %s",
					tc.target, len([]rune(key)), len(key), resp.Code, resp.Body)
			}
		}
	}
}
