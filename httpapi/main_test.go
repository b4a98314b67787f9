package httpapi_test

import (
	"fmt"
	"os"
	"sync/atomic"
	"testing"
)

// checkedResponses counts the responses the tests checked against the
// OpenAPI document.
var checkedResponses atomic.Int64

func TestMain(m *testing.M) {
	code := m.Run()
	fmt.Printf("apicheck: httpapi: %d responses checked against the OpenAPI document\n", checkedResponses.Load())
	os.Exit(code)
}
