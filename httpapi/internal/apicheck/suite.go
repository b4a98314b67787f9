package apicheck

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
)

// Suite is one test package's checking against the API's document: the
// count of the responses its tests checked, reported when they end, and
// a checker built at first use for tests that share one document.
type Suite struct {
	name  string
	opts  Options
	count atomic.Int64

	mu     sync.Mutex
	shared *Checker
}

// NewSuite returns the suite of the test package name, whose checkers
// check as o says (o's Count is replaced by the suite's own).
func NewSuite(name string, o Options) *Suite {
	s := &Suite{name: name, opts: o}
	s.opts.Count = &s.count
	return s
}

// New returns a checker of doc whose checks the suite counts.
func (s *Suite) New(doc []byte) (*Checker, error) {
	o := s.opts
	return New(doc, &o)
}

// Shared returns the suite's one checker, loading doc at the first call:
// for tests whose every service serves the same document.
func (s *Suite) Shared(t testing.TB, doc []byte) *Checker {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shared == nil {
		c, err := s.New(doc)
		if err != nil {
			t.Fatal(err)
		}
		s.shared = c
	}
	return s.shared
}

// Run runs the package's tests, reports how many responses they checked
// and returns the exit code: TestMain's os.Exit(suite.Run(m)).
func (s *Suite) Run(m *testing.M) int {
	code := m.Run()
	fmt.Printf("apicheck: %s: %d responses checked against the OpenAPI document\n", s.name, s.count.Load())
	return code
}
