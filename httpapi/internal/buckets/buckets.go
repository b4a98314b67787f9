// Package buckets names the rate-limit buckets that the API and the
// console share, so that both take from the same one.
package buckets

// WebhookTest names the bucket of an account's webhook test events: POST
// /api/v1/webhook/test and the console's "Send test event" take from it.
func WebhookTest(accountID string) string { return "webhook-test:" + accountID }
