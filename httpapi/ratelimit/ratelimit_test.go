package ratelimit_test

import (
	"testing"

	"github.com/validmail/validmail/httpapi/ratelimit"
	"github.com/validmail/validmail/httpapi/ratelimit/ratelimittest"
)

func TestMemoryMulti(t *testing.T) {
	ratelimittest.RunMulti(t, func(*testing.T) ratelimit.MultiLimiter { return ratelimit.NewMemory(nil) })
}
