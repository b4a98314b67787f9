package webhookmetrics_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/validmail/validmail/store/memstore"
	"github.com/validmail/validmail/webhook"
	"github.com/validmail/validmail/webhook/webhookmetrics"
)

func TestNew(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	hooks := memstore.NewBackend().Outbox
	now := time.Date(2030, 1, 1, 0, 0, 10, 0, time.UTC)
	m, err := webhookmetrics.New(reg, hooks, func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := webhookmetrics.New(reg, hooks, nil); err == nil {
		t.Error("registering twice on one registry succeeded")
	}
	if _, err := webhookmetrics.New(nil, nil, nil); !errors.Is(err, webhookmetrics.ErrNoRegisterer) {
		t.Errorf("nil Registerer: %v", err)
	}
	ev := webhook.Event{ID: "msg_1", CreatedAt: now.Add(-10 * time.Second)}
	for _, a := range []webhook.Attempt{{StatusCode: 500, Duration: time.Second}, {Error: "timed out", Duration: 15 * time.Second}, {StatusCode: 200, Duration: 20 * time.Millisecond}} {
		m.ObserveAttempt(ev, a)
	}
	m.ObserveOutcome(ev, webhook.OutcomeRetry)
	m.ObserveOutcome(ev, webhook.OutcomeRetry)
	m.ObserveOutcome(ev, webhook.OutcomeDelivered)
	for i := range 2 {
		e, _ := webhook.NewEvent("acct", fmt.Sprint(i), []byte(`{}`), now)
		if err := hooks.Enqueue(t.Context(), e); err != nil {
			t.Fatal(err)
		}
	}
	want := `
# HELP validmail_webhook_attempts_total Webhook HTTP attempts by result: the status class, or error when no response arrived.
# TYPE validmail_webhook_attempts_total counter
validmail_webhook_attempts_total{result="2xx"} 1
validmail_webhook_attempts_total{result="3xx"} 0
validmail_webhook_attempts_total{result="4xx"} 0
validmail_webhook_attempts_total{result="5xx"} 1
validmail_webhook_attempts_total{result="error"} 1
# HELP validmail_webhook_deliveries_total Webhook deliveries by outcome after an attempt: delivered, retry, dead or disabled (410 Gone).
# TYPE validmail_webhook_deliveries_total counter
validmail_webhook_deliveries_total{outcome="dead"} 0
validmail_webhook_deliveries_total{outcome="delivered"} 1
validmail_webhook_deliveries_total{outcome="disabled"} 0
validmail_webhook_deliveries_total{outcome="retry"} 2
# HELP validmail_webhook_outbox_pending Webhook deliveries not yet delivered or dead, across all accounts.
# TYPE validmail_webhook_outbox_pending gauge
validmail_webhook_outbox_pending 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"validmail_webhook_attempts_total", "validmail_webhook_deliveries_total", "validmail_webhook_outbox_pending"); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(reg, "validmail_webhook_attempt_duration_seconds", "validmail_webhook_delivery_latency_seconds"); n != 2 {
		t.Errorf("%d histograms, want 2", n)
	}
	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() == "validmail_webhook_delivery_latency_seconds" {
			if h := mf.GetMetric()[0].GetHistogram(); h.GetSampleCount() != 1 || h.GetSampleSum() != 10 {
				t.Errorf("delivery latency: %d samples, sum %v; want 1 of 10 s", h.GetSampleCount(), h.GetSampleSum())
			}
		}
	}
}
