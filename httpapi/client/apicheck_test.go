package client_test

import (
	"fmt"
	"os"
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
	fmt.Printf("apicheck: httpapi/client: %d responses checked against the OpenAPI document\n", checkedResponses.Load())
	os.Exit(code)
}

// checker checks the service's API responses against its document; the
// service's other routes pass unchecked.
func checker(t testing.TB, svc *service.Service) *apicheck.Checker {
	t.Helper()
	c, err := apicheck.New(svc.Handler().OpenAPI(), &apicheck.Options{Count: &checkedResponses, DocumentedOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
