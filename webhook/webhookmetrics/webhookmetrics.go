// Package webhookmetrics exports a [webhook.Dispatcher]'s activity as
// Prometheus metrics. It is apart from package webhook so that a host
// that delivers webhooks without Prometheus does not link its client.
package webhookmetrics

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/validmail/validmail/webhook"
)

// outboxScrapeTimeout bounds the outbox query behind the depth gauge.
const outboxScrapeTimeout = 5 * time.Second

var _ webhook.Observer = (*Metrics)(nil)

// ErrNoRegisterer reports a nil Registerer passed to [New].
var ErrNoRegisterer = errors.New("webhookmetrics: nil Registerer")

// Metrics exports a [webhook.Dispatcher]'s activity as Prometheus
// metrics. It is a [webhook.Observer]: pass it as the dispatcher's
// Config.Observer. Create it with [New]; it is safe for concurrent use.
//
// Metrics:
//
//	validmail_webhook_deliveries_total{outcome}     delivered, retry, dead, disabled
//	validmail_webhook_attempts_total{result}        2xx, 3xx, 4xx, 5xx, error (no response)
//	validmail_webhook_attempt_duration_seconds      one HTTP attempt, until the response headers
//	validmail_webhook_delivery_latency_seconds      event creation to successful delivery
//	validmail_webhook_outbox_pending                deliveries not finished, all accounts
type Metrics struct {
	deliveries *prometheus.CounterVec
	attempts   *prometheus.CounterVec
	duration   prometheus.Histogram
	latency    prometheus.Histogram
	now        func() time.Time
}

// New registers the webhook metrics on reg. When outbox is
// not nil, validmail_webhook_outbox_pending reads [webhook.Outbox.Pending]
// at each scrape (NaN if that fails); keep scrapes of a large SQL outbox
// reasonably spaced. now is the clock of the delivery latency; nil means
// time.Now. It returns an error when a metric cannot be registered, for
// example twice on one registry.
func New(reg prometheus.Registerer, outbox webhook.Outbox, now func() time.Time) (*Metrics, error) {
	if reg == nil {
		return nil, ErrNoRegisterer
	}
	if now == nil {
		now = time.Now
	}
	m := &Metrics{
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "validmail_webhook_deliveries_total",
			Help: "Webhook deliveries by outcome after an attempt: delivered, retry, dead or disabled (410 Gone).",
		}, []string{"outcome"}),
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "validmail_webhook_attempts_total",
			Help: "Webhook HTTP attempts by result: the status class, or error when no response arrived.",
		}, []string{"result"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "validmail_webhook_attempt_duration_seconds",
			Help:    "Time of one webhook HTTP attempt, until the response headers or the error.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 15},
		}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "validmail_webhook_delivery_latency_seconds",
			Help:    "Time from a webhook event's creation to its successful delivery, retries included.",
			Buckets: []float64{.01, .05, .1, .5, 1, 5, 10, 30, 60, 300, 1800, 7200, 36000, 86400},
		}),
		now: now,
	}
	cs := []prometheus.Collector{m.deliveries, m.attempts, m.duration, m.latency}
	if outbox != nil {
		cs = append(cs, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "validmail_webhook_outbox_pending",
			Help: "Webhook deliveries not yet delivered or dead, across all accounts.",
		}, func() float64 {
			ctx, cancel := context.WithTimeout(context.Background(), outboxScrapeTimeout)
			defer cancel()
			n, err := outbox.Pending(ctx)
			if err != nil {
				return math.NaN()
			}
			return float64(n)
		}))
		if op, ok := outbox.(webhook.OldestPender); ok {
			cs = append(cs, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name: "validmail_webhook_outbox_oldest_pending_age_seconds",
				Help: "Time since the oldest pending webhook delivery was first due; 0 when none is pending.",
			}, func() float64 {
				ctx, cancel := context.WithTimeout(context.Background(), outboxScrapeTimeout)
				defer cancel()
				t, err := op.OldestPending(ctx)
				switch {
				case err != nil:
					return math.NaN()
				case t.IsZero():
					return 0
				}
				return max(m.now().Sub(t).Seconds(), 0)
			}))
		}
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("webhookmetrics: register: %w", err)
		}
	}
	// Every outcome and result is exported from the start, at zero.
	for _, o := range []webhook.Outcome{webhook.OutcomeDelivered, webhook.OutcomeRetry, webhook.OutcomeDead, webhook.OutcomeDisabled} {
		m.deliveries.WithLabelValues(string(o))
	}
	for _, code := range []int{200, 300, 400, 500, 0} {
		m.attempts.WithLabelValues(attemptResult(code))
	}
	return m, nil
}

// ObserveAttempt implements [webhook.Observer].
func (m *Metrics) ObserveAttempt(_ webhook.Event, a webhook.Attempt) {
	m.attempts.WithLabelValues(attemptResult(a.StatusCode)).Inc()
	m.duration.Observe(a.Duration.Seconds())
}

// ObserveOutcome implements [webhook.Observer].
func (m *Metrics) ObserveOutcome(ev webhook.Event, o webhook.Outcome) {
	m.deliveries.WithLabelValues(string(o)).Inc()
	if o == webhook.OutcomeDelivered && !ev.CreatedAt.IsZero() {
		m.latency.Observe(max(0, m.now().Sub(ev.CreatedAt).Seconds()))
	}
}

// attemptResult is the result label of an attempt with the status code.
func attemptResult(code int) string {
	switch {
	case code >= 200 && code < 300:
		return "2xx"
	case code >= 300 && code < 400:
		return "3xx"
	case code >= 400 && code < 500:
		return "4xx"
	case code >= 500 && code < 600:
		return "5xx"
	}
	return "error"
}
