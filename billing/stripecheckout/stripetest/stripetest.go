// Package stripetest makes what the Stripe Checkout tests send a seller:
// the packs it sells, checkout events and their signatures.
package stripetest

import (
	"encoding/json"
	"maps"
	"time"

	"github.com/stripe/stripe-go/v85/webhook"

	"github.com/validmail/validmail/billing"
)

// Packs returns the two packs the tests sell: 1,000 credits for 9 USD and
// 10,000 for 75 USD.
func Packs() []billing.Pack {
	return []billing.Pack{{Credits: 1000, Price: 900, Currency: "usd"}, {Credits: 10000, Price: 7500, Currency: "usd"}}
}

// CheckoutEvent returns the body of a Stripe event of type typ (such as
// checkout.session.completed) about the Checkout Session session, whose
// payment_status is paymentStatus; fields adds to the session's own.
func CheckoutEvent(typ, session, paymentStatus string, fields map[string]any) []byte {
	object := map[string]any{"id": session, "object": "checkout.session", "payment_status": paymentStatus}
	maps.Copy(object, fields)
	b, err := json.Marshal(map[string]any{
		"id": "evt_" + session, "object": "event", "api_version": "2025-01-27.acacia", "type": typ,
		"data": map[string]any{"object": object},
	})
	if err != nil {
		panic(err) // fields a test wrote that JSON cannot hold
	}
	return b
}

// Sign returns the Stripe-Signature header of payload signed with the
// webhook endpoint's secret at at.
func Sign(payload []byte, secret string, at time.Time) string {
	return webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: payload, Secret: secret, Timestamp: at}).Header
}
