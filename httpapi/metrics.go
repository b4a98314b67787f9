package httpapi

import (
	"fmt"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/validmail/validmail/emailcheck"
)

// metrics are the handler's Prometheus collectors.
type metrics struct {
	requests    *prometheus.CounterVec
	latency     *prometheus.HistogramVec
	validations *prometheus.CounterVec
	credits     prometheus.Counter
	refunds     prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "validmail_http_requests_total",
			Help: "HTTP requests by route pattern and status code.",
		}, []string{"route", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "validmail_http_request_duration_seconds",
			Help:    "Time to answer an HTTP request, by route pattern.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}, []string{"route"}),
		validations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "validmail_validations_total",
			Help: "Single validations answered by GET /validate, by confidence status.",
		}, []string{"status"}),
		credits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "validmail_credits_charged_total",
			Help: "Credits charged by accepted requests: single validations and batches.",
		}),
		refunds: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "validmail_credits_refunded_total",
			Help: "Credits refunded for single validations that ended UNKNOWN (batch jobs: validmail_job_credits_refunded_total).",
		}),
	}
	for _, c := range []prometheus.Collector{m.requests, m.latency, m.validations, m.credits, m.refunds} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("httpapi: register metrics: %w", err)
		}
	}
	// Every series a dashboard or an alert reads exists from the start,
	// at zero, so that a deployment that has served none yet (or serves
	// batches only) shows zero rather than no data.
	for _, s := range emailcheck.Statuses() {
		m.validations.WithLabelValues(string(s))
	}
	for route, code := range meteredRoutes {
		m.requests.WithLabelValues(route, strconv.Itoa(code))
		m.latency.WithLabelValues(route)
	}
	return m, nil
}

// meteredRoutes are the routes whose request count (with their usual
// status) and latency are exported from the start.
var meteredRoutes = map[string]int{
	"GET /validate":        200,
	"POST /validate/async": 202,
	"POST /api/v1/lists":   202,
}

func (m *metrics) observe(route string, status int, d time.Duration) {
	m.requests.WithLabelValues(route, strconv.Itoa(status)).Inc()
	m.latency.WithLabelValues(route).Observe(d.Seconds())
}

func (m *metrics) validation(s emailcheck.Status) {
	m.validations.WithLabelValues(string(s)).Inc()
}
