package pgstore_test

import (
	"testing"

	"github.com/validmail/validmail/webhook"
	"github.com/validmail/validmail/webhook/webhooktest"
)

// dispatchCrashBackend is an outbox schema shared by a test process and
// its dispatchers.
var dispatchCrashBackend = webhooktest.CrashBackend{
	ChildTest:    "TestDispatchCrashChild",
	NewNamespace: func(tb testing.TB) string { return testSchema(tb, testPool(tb)) },
	Open: func(tb testing.TB, schema string) (webhook.Outbox, webhook.Endpoints) {
		w := openSchema(tb, schema).Webhooks()
		return w, w
	},
}

func TestDispatchCrash(t *testing.T)      { webhooktest.RunCrash(t, dispatchCrashBackend) }
func TestDispatchCrashChild(t *testing.T) { webhooktest.CrashChild(t, dispatchCrashBackend) }
