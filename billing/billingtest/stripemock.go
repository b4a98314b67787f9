package billingtest

import (
	"net"
	"net/url"
	"os"
	"testing"
	"time"
)

// EnvStripeMock names the environment variable holding the address of a
// stripe-mock server (github.com/stripe/stripe-mock) for tests:
// "http://127.0.0.1:12111".
const EnvStripeMock = "VALIDMAIL_TEST_STRIPE_MOCK"

// StripeMock returns the address of the stripe-mock server tests call.
// Unset, the test is skipped, or fails when the CI variable is set (CI
// must run it); set but unreachable, the test fails.
func StripeMock(t testing.TB) string {
	t.Helper()
	raw := os.Getenv(EnvStripeMock)
	if raw == "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not set: CI must run the Stripe tests against stripe-mock", EnvStripeMock)
		}
		t.Skipf("%s is not set: skipping the test against stripe-mock", EnvStripeMock)
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		t.Fatalf("%s=%q is not an address", EnvStripeMock, raw)
	}
	c, err := net.DialTimeout("tcp", u.Host, 10*time.Second)
	if err != nil {
		t.Fatalf("stripe-mock at %s: %v", raw, err)
	}
	c.Close()
	return raw
}
