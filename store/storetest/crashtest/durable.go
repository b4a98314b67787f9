package crashtest

import (
	"os"
	"testing"

	"github.com/validmail/validmail/store"
)

// Durable is a backend whose state outlives the process using it, as the
// crash tests need: they kill a process and let another one carry on
// over the same data. A backend that lives in memory cannot be one.
type Durable struct {
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
	Open func(tb testing.TB, namespace string) *store.Backend
}

// Begin starts the parent side of a crash test whose children find their
// namespace in the environment variable env: it skips inside a child
// process and under -short, marks t parallel, and returns a fresh
// namespace and the backend over it.
func Begin(t *testing.T, d Durable, env string) (namespace string, b *store.Backend) {
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
func InChild(t *testing.T, d Durable, env string) (namespace string, b *store.Backend) {
	t.Helper()
	namespace = os.Getenv(env)
	if namespace == "" {
		t.Skip("the child process of a crash test")
	}
	return namespace, d.Open(t, namespace)
}
