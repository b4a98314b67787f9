package redisstore_test

import (
	"testing"

	"github.com/validmail/validmail/jobs/jobstest"
)

func BenchmarkQueue(b *testing.B) {
	jobstest.Bench(b, func(tb testing.TB) jobstest.Backend {
		s, _, _ := setup(tb, nil)
		return jobstest.Backend{Driver: s, Credits: s}
	})
}
