package webhooktest_test

import (
	"testing"

	"github.com/validmail/validmail/webhook"
	"github.com/validmail/validmail/webhook/internal/memoutbox"
	"github.com/validmail/validmail/webhook/webhooktest"
)

func TestMemoryReference(t *testing.T) {
	t.Parallel()
	webhooktest.Run(t, func(t *testing.T) (webhook.Outbox, webhook.Endpoints) {
		s := memoutbox.New()
		return s, s
	})
}
