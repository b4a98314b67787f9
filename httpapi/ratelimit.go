package httpapi

import "github.com/validmail/validmail/httpapi/ratelimit"

// DefaultWebhookTestLimit is the default [Config.WebhookTestLimit].
var DefaultWebhookTestLimit = ratelimit.Limit{PerSecond: DefaultWebhookTestRatePerSecond, Burst: DefaultWebhookTestBurst}

// WebhookTestKey names the bucket of an account's webhook test events in
// a [ratelimit.Limiter], for every handler that sends them.
func WebhookTestKey(accountID string) string { return "webhook-test:" + accountID }
