// Package buckets names the rate-limit buckets that belong to an account:
// those the API and the console share, so that both take from the same
// one, and those of the API's requests. Every name has the account's id as
// its group (see package ratelimit's Group), so that a shared limiter keeps an account's
// buckets together (on Redis, in the account's shard) and one call may
// take from several of them at once.
package buckets

// group is the account's part of its buckets' names.
func group(accountID string) string { return "{" + accountID + "}" }

// WebhookTest names the bucket of an account's webhook test events: POST
// /api/v1/webhook/test and the console's "Send test event" take from it.
func WebhookTest(accountID string) string { return "webhook-test:" + group(accountID) }

// APIKey names the bucket of an API key's requests of one class (class
// "" for the metered calls, "read:" for reads): beside its account's
// [Account] bucket of the class, both taken from in one call.
func APIKey(class, accountID, keyID string) string {
	return class + group(accountID) + ":key:" + keyID
}

// Account names the bucket of an account's requests of one class, all its
// keys together.
func Account(class, accountID string) string { return class + group(accountID) + ":acct" }

// Probe names the bucket of an account's SMTP probes.
func Probe(accountID string) string { return "probe:" + group(accountID) }
