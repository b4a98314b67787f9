package service_test

import (
	"fmt"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/validmail/validmail/httpapi/internal/apicheck"
	"github.com/validmail/validmail/httpapi/service"
)

// checkedResponses counts the responses the tests checked against the
// OpenAPI document.
var checkedResponses atomic.Int64

func TestMain(m *testing.M) {
	code := m.Run()
	fmt.Printf("apicheck: httpapi/service: %d responses checked against the OpenAPI document\n", checkedResponses.Load())
	os.Exit(code)
}

// checkers holds the checker of the API's document, loaded once for the
// package's tests (every service serves the same document).
var checkers struct {
	sync.Mutex
	c *apicheck.Checker
}

func checker(t testing.TB, svc *service.Service) *apicheck.Checker {
	t.Helper()
	checkers.Lock()
	defer checkers.Unlock()
	if checkers.c == nil {
		c, err := apicheck.New(svc.Handler().OpenAPI(), &apicheck.Options{Count: &checkedResponses, DocumentedOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		checkers.c = c
	}
	return checkers.c
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
