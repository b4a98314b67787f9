package client_test

import (
	"os"
	"testing"

	"github.com/validmail/validmail/httpapi/internal/apicheck"
	"github.com/validmail/validmail/httpapi/service"
)

// apiSuite checks the tests' API responses against the OpenAPI document
// and counts them.
var apiSuite = apicheck.NewSuite("httpapi/client", apicheck.Options{DocumentedOnly: true})

func TestMain(m *testing.M) { os.Exit(apiSuite.Run(m)) }

// checker checks the service's API responses against its document; the
// service's other routes pass unchecked.
func checker(t testing.TB, svc *service.Service) *apicheck.Checker {
	t.Helper()
	c, err := apiSuite.New(svc.Handler().OpenAPI())
	if err != nil {
		t.Fatal(err)
	}
	return c
}
