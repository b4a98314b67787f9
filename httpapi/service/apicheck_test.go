package service_test

import (
	"net/http"
	"os"
	"testing"

	"github.com/validmail/validmail/httpapi/internal/apicheck"
	"github.com/validmail/validmail/httpapi/service"
)

// apiSuite checks the tests' API responses against the OpenAPI document
// and counts them.
var apiSuite = apicheck.NewSuite("httpapi/service", apicheck.Options{DocumentedOnly: true})

func TestMain(m *testing.M) { os.Exit(apiSuite.Run(m)) }

// checker is the checker of the API's document, loaded once for the
// package's tests (every service serves the same document).
func checker(t testing.TB, svc *service.Service) *apicheck.Checker {
	t.Helper()
	return apiSuite.Shared(t, svc.Handler().OpenAPI())
}

// apiMux is svc's mux with every response of an API route checked
// against the OpenAPI document; the console's, health and metrics routes
// pass unchecked.
func apiMux(t testing.TB, svc *service.Service) http.Handler {
	return checker(t, svc).Handler(t, svc.Mux())
}

// apiClient is an HTTP client whose every response from an API route of
// svc is checked against the OpenAPI document.
func apiClient(t testing.TB, svc *service.Service) *http.Client {
	return &http.Client{Transport: checker(t, svc).Transport(t, nil)}
}
