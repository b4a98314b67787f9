package redisstore_test

import (
	"testing"

	"github.com/validmail/validmail/webhook"
	"github.com/validmail/validmail/webhook/webhooktest"
)

// dispatchCrashBackend is an outbox prefix shared by a test process and
// its dispatchers.
var dispatchCrashBackend = webhooktest.CrashBackend{
	ChildTest:    "TestDispatchCrashChild",
	NewNamespace: newPrefix,
	Open: func(tb testing.TB, prefix string) (webhook.Outbox, webhook.Endpoints) {
		w := openPrefix(tb, prefix).Webhooks()
		return w, w
	},
}

func TestDispatchCrash(t *testing.T)      { webhooktest.RunCrash(t, dispatchCrashBackend) }
func TestDispatchCrashChild(t *testing.T) { webhooktest.CrashChild(t, dispatchCrashBackend) }
