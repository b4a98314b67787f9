package httpapi_test

import (
	"os"
	"testing"

	"github.com/validmail/validmail/httpapi/internal/apicheck"
)

// apiSuite checks the tests' responses against the OpenAPI document and
// counts them.
var apiSuite = apicheck.NewSuite("httpapi", apicheck.Options{})

func TestMain(m *testing.M) { os.Exit(apiSuite.Run(m)) }
