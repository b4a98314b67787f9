package client

import (
	"context"
	"net/url"
	"time"
)

// Key is an API key as the API shows it; Secret is set only in the answer
// to CreateKey.
type Key struct {
	ID          string     `json:"id"`
	Name        string     `json:"name"`
	Prefix      string     `json:"prefix"`
	Permissions []string   `json:"permissions"`
	CreatedAt   time.Time  `json:"created_at"`
	LastUsedAt  *time.Time `json:"last_used_at"`
	RevokedAt   *time.Time `json:"revoked_at"`
	Secret      string     `json:"key,omitempty"`
}

// CreateKey creates a key with the permissions (nil for the default set);
// its secret is in the answer only.
func (c *Client) CreateKey(ctx context.Context, name string, permissions []string) (Key, error) {
	body := map[string]any{"name": name}
	if permissions != nil {
		body["permissions"] = permissions
	}
	var k Key
	err := c.do(ctx, request{method: "POST", path: "/api/v1/keys", body: body}, &k)
	return k, err
}

// Keys lists the account's keys.
func (c *Client) Keys(ctx context.Context) ([]Key, error) {
	var out struct {
		Keys []Key `json:"keys"`
	}
	err := c.do(ctx, request{method: "GET", path: "/api/v1/keys", repeatable: true}, &out)
	return out.Keys, err
}

// RevokeKey revokes a key; revoking the client's own key needs confirm.
func (c *Client) RevokeKey(ctx context.Context, id string, confirm bool) (Key, error) {
	path := "/api/v1/keys/" + url.PathEscape(id)
	if confirm {
		path += "?confirm=true"
	}
	var k Key
	err := c.do(ctx, request{method: "DELETE", path: path, repeatable: true}, &k)
	return k, err
}

// Webhook is the account's webhook endpoint; Secret is set only when it
// was just generated.
type Webhook struct {
	URL            string  `json:"url"`
	Enabled        bool    `json:"enabled"`
	DisabledReason *string `json:"disabled_reason"`
	Secret         string  `json:"secret,omitempty"`
}

// Webhook reads the account's endpoint.
func (c *Client) Webhook(ctx context.Context) (Webhook, error) {
	var w Webhook
	err := c.do(ctx, request{method: "GET", path: "/api/v1/webhook", repeatable: true}, &w)
	return w, err
}

// PutWebhook sets the account's endpoint URL (and rotates its secret
// when asked).
func (c *Client) PutWebhook(ctx context.Context, endpoint string, rotateSecret bool) (Webhook, error) {
	var w Webhook
	err := c.do(ctx, request{method: "PUT", path: "/api/v1/webhook", body: map[string]any{"url": endpoint, "rotate_secret": rotateSecret}, repeatable: !rotateSecret}, &w)
	return w, err
}

// DeleteWebhook removes the account's endpoint.
func (c *Client) DeleteWebhook(ctx context.Context) error {
	return c.do(ctx, request{method: "DELETE", path: "/api/v1/webhook", repeatable: true}, nil)
}

// DeleteBatch erases a batch, its results and a list's rows at once (the
// credits it cost stay spent). A batch already gone, or retried after a
// lost answer, is an *Error with Code "batch_not_found".
func (c *Client) DeleteBatch(ctx context.Context, id string) error {
	return c.do(ctx, request{method: "DELETE", path: "/api/v1/batches/" + url.PathEscape(id), repeatable: true}, nil)
}

// WebhookTest is the outcome of a signed test event.
type WebhookTest struct {
	EventID    string  `json:"event_id"`
	Success    bool    `json:"success"`
	StatusCode *int    `json:"status_code"`
	Error      *string `json:"error"`
}

// TestWebhook sends a signed test event to the endpoint.
func (c *Client) TestWebhook(ctx context.Context) (WebhookTest, error) {
	var r WebhookTest
	err := c.do(ctx, request{method: "POST", path: "/api/v1/webhook/test"}, &r)
	return r, err
}

// DeliveryPage is a page of the webhook delivery log, newest first.
type DeliveryPage struct {
	Deliveries []map[string]any `json:"deliveries"`
	NextCursor *string          `json:"next_cursor"`
}

// Deliveries reads a page of the webhook delivery log.
func (c *Client) Deliveries(ctx context.Context, limit int, cursor string) (DeliveryPage, error) {
	var p DeliveryPage
	err := c.do(ctx, request{method: "GET", path: "/api/v1/webhook/deliveries" + pageQuery(limit, cursor), repeatable: true}, &p)
	return p, err
}
