package httpapi_test

import (
	"encoding/base64"
	"net/http"
	"strings"
	"testing"
)

// TestFieldsNotText sends API fields holding NUL or bytes that are not
// UTF-8, and cursors that decode to such bytes or to no position: each
// is a 400 naming the field, before any store sees it.
func TestFieldsNotText(t *testing.T) {
	f := setup(t, &options{webhooks: true})
	cursor := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	for _, c := range []struct {
		name   string
		rq     req
		detail string
	}{
		{"KeyNameBadUTF8", req{method: "POST", target: "/api/v1/keys", body: "{\"name\":\"k\xff\"}"}, "name"},
		{"KeyNameNUL", req{method: "POST", target: "/api/v1/keys", body: `{"name":"k\u0000"}`}, "name"},
		{"WebhookURLBadUTF8", req{method: "PUT", target: "/api/v1/webhook", body: "{\"url\":\"https://example.com/\xff\"}"}, "url"},
		{"WebhookURLNUL", req{method: "PUT", target: "/api/v1/webhook", body: `{"url":"https://example.com/\u0000"}`}, "url"},
		{"IdempotencyKey", req{method: "POST", target: "/validate/async", body: `{"emails":["a@good.com"]}`, header: map[string]string{"Idempotency-Key": "k\xfe"}}, "Idempotency-Key"},
		{"DeliveriesCursorBytes", req{method: "GET", target: "/api/v1/webhook/deliveries?cursor=" + cursor("0:\xff\xfe")}, "cursor"},
		{"DeliveriesCursorNUL", req{method: "GET", target: "/api/v1/webhook/deliveries?cursor=" + cursor("0:msg\x00")}, "cursor"},
		{"DeliveriesCursorFarFuture", req{method: "GET", target: "/api/v1/webhook/deliveries?cursor=" + cursor("9223372036854775807:msg_x")}, "cursor"},
		{"DeliveriesCursorNegative", req{method: "GET", target: "/api/v1/webhook/deliveries?cursor=" + cursor("-62135596800000000:msg_x")}, "cursor"},
		{"BatchesCursorNotNumeric", req{method: "GET", target: "/api/v1/batches?cursor=" + cursor("0:abc")}, "cursor"},
		{"HistoryCursorBytes", req{method: "GET", target: "/api/v1/credits/history?cursor=" + cursor("0:\xff\xfe")}, "cursor"},
		{"ResultsCursor", req{method: "GET", target: "/api/v1/batches/1/results?cursor=" + cursor("0:1\x00")}, "cursor"},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.rq.key = f.key
			resp := f.do(t, c.rq)
			if resp.Code != http.StatusBadRequest {
				t.Fatalf("%d: %s", resp.Code, resp.Body)
			}
			if d, _ := resp.JSON(t)["detail"].(string); !strings.Contains(d, c.detail) {
				t.Fatalf("detail %q does not name %s", d, c.detail)
			}
		})
	}
	// A cursor this API gave still works.
	resp := f.do(t, req{method: "GET", target: "/api/v1/credits/history?limit=1", key: f.key})
	if resp.Code != http.StatusOK {
		t.Fatalf("history: %d", resp.Code)
	}
}
