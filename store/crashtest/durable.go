package crashtest

import (
	"os"
	"testing"
)

// Durable is a backend whose state outlives the process using it, as the
// crash tests need: they kill a process and let another one carry on
// over the same data. A backend that lives in memory cannot be one. B is
// what a crash suite needs of the backend, its own harness (such as
// jobstest.Backend); storetest.RunBackend adapts a deployment's backend
// to each suite's.
type Durable[B any] struct {
	// ChildTest is the name of the top-level test that the child
	// processes run; that test must call the crash suite's child function
	// (storetest.RunBackend does) when the suite's environment variable is
	// set.
	ChildTest string
	// NewNamespace returns a fresh, empty namespace (a schema, a key
	// prefix) in the parent process and arranges for it to be removed
	// when tb ends.
	NewNamespace func(tb testing.TB) string
	// Open returns the backend over namespace. It is called in the parent
	// and in each child process.
	Open func(tb testing.TB, namespace string) B
}

// Map returns a Durable over the same namespaces whose Open returns
// f(tb, b) for what d.Open returns: how a harness of one kind (a whole
// deployment's backend) becomes another (the part a suite checks).
func Map[B, C any](d Durable[B], f func(tb testing.TB, b B) C) Durable[C] {
	m := Durable[C]{ChildTest: d.ChildTest, NewNamespace: d.NewNamespace}
	if d.Open != nil {
		m.Open = func(tb testing.TB, namespace string) C { return f(tb, d.Open(tb, namespace)) }
	}
	return m
}

// Begin starts the parent side of a crash test whose children find their
// namespace in the environment variable env: it skips inside a child
// process and under -short, marks t parallel, and returns a fresh
// namespace and the backend over it.
func Begin[B any](t *testing.T, d Durable[B], env string) (namespace string, b B) {
	t.Helper()
	if os.Getenv(env) != "" {
		t.Skip("in a crash child process")
	}
	if testing.Short() {
		t.Skip("starts child processes")
	}
	if d.ChildTest == "" || d.NewNamespace == nil || d.Open == nil {
		t.Fatal("crashtest: Durable needs ChildTest, NewNamespace and Open")
	}
	t.Parallel()
	namespace = d.NewNamespace(t)
	return namespace, d.Open(t, namespace)
}

// InChild returns the namespace a child process of a crash test works in,
// from the environment variable env, and the backend over it; outside a
// child process it skips t.
func InChild[B any](t *testing.T, d Durable[B], env string) (namespace string, b B) {
	t.Helper()
	namespace = os.Getenv(env)
	if namespace == "" {
		t.Skip("the child process of a crash test")
	}
	return namespace, d.Open(t, namespace)
}
