package service

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/jobs"
)

// statsValidator is a validator that reports its DNS statistics; an
// *emailcheck.Validator is one.
type statsValidator interface {
	Stats() emailcheck.Stats
}

// pacingValidator is a validator that reports how it paces its queries to
// each nameserver; an *emailcheck.Validator is one.
type pacingValidator interface {
	ResolverStats() []emailcheck.NameserverStats
}

// trustValidator is a validator that tells whether it believes its
// nameservers; an *emailcheck.Validator is one.
type trustValidator interface {
	TrustState() string
}

// opsCollector reads, at each scrape, the validator's DNS statistics and
// pacing per nameserver, the queue's depth and the worker pool's utilisation: the numbers an
// operator watches that no request path counts.
type opsCollector struct {
	validator statsValidator  // nil when the validator keeps no statistics
	pacing    pacingValidator // nil when the validator does not pace queries
	trust     trustValidator  // nil when the validator does not judge its nameservers
	queue     *jobs.Queue     // nil without one; its Stats may be ErrNoStats
	pool      *jobs.Pool      // nil without workers
	now       func() time.Time

	cacheHits, cacheMisses, cacheEvictions, cacheEntries, inFlight, queries, queryLatency *prometheus.Desc
	queueJobs, oldestActive, queueUp                                                      *prometheus.Desc
	workers, workersBusy, jobRefunds                                                      *prometheus.Desc
	nsWindow, nsInFlight, nsWaiting, nsSRTT, nsRTO                                        *prometheus.Desc
	dnsTrusted, dnsPaused                                                                 *prometheus.Desc
}

func newOpsCollector(v jobs.Validator, q *jobs.Queue, pool *jobs.Pool) *opsCollector {
	c := &opsCollector{
		queue: q,
		pool:  pool,
		now:   time.Now,
		cacheHits: prometheus.NewDesc("validmail_dns_cache_hits_total",
			"Domain verdicts found in the validator's cache.", nil, nil),
		cacheMisses: prometheus.NewDesc("validmail_dns_cache_misses_total",
			"Domain verdicts not in the cache, looked up (or joined to a lookup in flight).", nil, nil),
		cacheEvictions: prometheus.NewDesc("validmail_dns_cache_evictions_total",
			"Domain verdicts dropped from the full cache.", nil, nil),
		cacheEntries: prometheus.NewDesc("validmail_dns_cache_entries",
			"Domains in the validator's cache.", nil, nil),
		inFlight: prometheus.NewDesc("validmail_dns_lookups_in_flight",
			"Domain lookups running now.", nil, nil),
		queries: prometheus.NewDesc("validmail_dns_queries_total",
			"DNS exchanges by outcome: answer, nxdomain, rcode (SERVFAIL and the like), timeout, error.", []string{"outcome"}, nil),
		queryLatency: prometheus.NewDesc("validmail_dns_query_duration_seconds",
			"Time of the DNS exchanges that got an answer.", nil, nil),
		queueJobs: prometheus.NewDesc("validmail_queue_jobs",
			"Jobs not yet completed, by state: available (waiting for a worker), delayed (waiting to retry), running (leased).", []string{"state"}, nil),
		oldestActive: prometheus.NewDesc("validmail_queue_oldest_active_job_age_seconds",
			"Age of the oldest job not yet completed; 0 when there is none.", nil, nil),
		queueUp: prometheus.NewDesc("validmail_queue_stats_up",
			"1 when the queue's depth could be read at this scrape, else 0.", nil, nil),
		workers: prometheus.NewDesc("validmail_workers",
			"Workers this instance runs.", nil, nil),
		workersBusy: prometheus.NewDesc("validmail_workers_busy",
			"Workers validating a job now; divided by validmail_workers, the utilisation.", nil, nil),
		jobRefunds: prometheus.NewDesc("validmail_job_credits_refunded_total",
			"Credits refunded by this instance's workers for jobs that ended UNKNOWN.", nil, nil),
		nsWindow: prometheus.NewDesc("validmail_dns_window",
			"DNS queries the validator lets be in flight to a nameserver at once: grown by answers, halved when answers go missing.", []string{"nameserver"}, nil),
		nsInFlight: prometheus.NewDesc("validmail_dns_queries_in_flight",
			"DNS queries in flight to a nameserver, within its window.", []string{"nameserver"}, nil),
		nsWaiting: prometheus.NewDesc("validmail_dns_queries_waiting",
			"DNS queries waiting for room in a nameserver's window.", []string{"nameserver"}, nil),
		nsSRTT: prometheus.NewDesc("validmail_dns_srtt_seconds",
			"Smoothed round-trip time of a nameserver's answers; 0 before the first.", []string{"nameserver"}, nil),
		dnsTrusted: prometheus.NewDesc("validmail_dns_trusted",
			"0 when the nameservers deny names that exist (the root, a top-level domain): no address is judged INVALID_DOMAIN on their answers; 1 otherwise (trusted, or not checked yet).", nil, nil),
		dnsPaused: prometheus.NewDesc("validmail_workers_paused",
			"1 while this instance's workers lease nothing because no nameserver answers (a DNS outage); 0 otherwise.", nil, nil),
		nsRTO: prometheus.NewDesc("validmail_dns_rto_seconds",
			"Retransmission timeout of a nameserver: how long a query waits for its answer before it is sent again.", []string{"nameserver"}, nil),
	}
	if sv, ok := v.(statsValidator); ok {
		c.validator = sv
	}
	if pv, ok := v.(pacingValidator); ok {
		c.pacing = pv
	}
	if tv, ok := v.(trustValidator); ok {
		c.trust = tv
	}
	return c
}

// Describe implements [prometheus.Collector].
func (c *opsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.cacheHits, c.cacheMisses, c.cacheEvictions, c.cacheEntries, c.inFlight, c.queries,
		c.queryLatency, c.queueJobs, c.oldestActive, c.queueUp, c.workers, c.workersBusy, c.jobRefunds,
		c.nsWindow, c.nsInFlight, c.nsWaiting, c.nsSRTT, c.nsRTO, c.dnsTrusted, c.dnsPaused} {
		ch <- d
	}
}

// scrapeTimeout bounds the queue's depth query at a scrape.
const scrapeTimeout = 2 * time.Second

// Collect implements [prometheus.Collector].
func (c *opsCollector) Collect(ch chan<- prometheus.Metric) {
	if c.validator != nil {
		st := c.validator.Stats()
		ch <- prometheus.MustNewConstMetric(c.cacheHits, prometheus.CounterValue, float64(st.CacheHits))
		ch <- prometheus.MustNewConstMetric(c.cacheMisses, prometheus.CounterValue, float64(st.CacheMisses))
		ch <- prometheus.MustNewConstMetric(c.cacheEvictions, prometheus.CounterValue, float64(st.CacheEvictions))
		ch <- prometheus.MustNewConstMetric(c.cacheEntries, prometheus.GaugeValue, float64(st.CacheEntries))
		ch <- prometheus.MustNewConstMetric(c.inFlight, prometheus.GaugeValue, float64(st.LookupsInFlight))
		for outcome, n := range st.Queries {
			ch <- prometheus.MustNewConstMetric(c.queries, prometheus.CounterValue, float64(n), outcome)
		}
		h := st.QueryLatency
		buckets := make(map[float64]uint64, len(h.Bounds))
		var cum uint64
		for i, b := range h.Bounds {
			cum += h.Counts[i]
			buckets[b] = cum
		}
		ch <- prometheus.MustNewConstHistogram(c.queryLatency, h.Count, h.Sum, buckets)
	}
	if c.pacing != nil {
		for _, ns := range c.pacing.ResolverStats() {
			ch <- prometheus.MustNewConstMetric(c.nsWindow, prometheus.GaugeValue, float64(ns.Window), ns.Addr)
			ch <- prometheus.MustNewConstMetric(c.nsInFlight, prometheus.GaugeValue, float64(ns.InFlight), ns.Addr)
			ch <- prometheus.MustNewConstMetric(c.nsWaiting, prometheus.GaugeValue, float64(ns.Waiting), ns.Addr)
			ch <- prometheus.MustNewConstMetric(c.nsSRTT, prometheus.GaugeValue, ns.SRTT.Seconds(), ns.Addr)
			ch <- prometheus.MustNewConstMetric(c.nsRTO, prometheus.GaugeValue, ns.RTO.Seconds(), ns.Addr)
		}
	}
	if c.trust != nil {
		trusted := 1.0
		if c.trust.TrustState() == "untrusted" {
			trusted = 0
		}
		ch <- prometheus.MustNewConstMetric(c.dnsTrusted, prometheus.GaugeValue, trusted)
	}
	if c.pool != nil {
		paused := 0.0
		if c.pool.DNSDown() {
			paused = 1
		}
		ch <- prometheus.MustNewConstMetric(c.dnsPaused, prometheus.GaugeValue, paused)
	}
	if c.queue != nil {
		c.collectQueue(ch)
	}
	if c.pool != nil {
		ch <- prometheus.MustNewConstMetric(c.workers, prometheus.GaugeValue, float64(c.pool.Workers()))
		ch <- prometheus.MustNewConstMetric(c.workersBusy, prometheus.GaugeValue, float64(c.pool.Busy()))
		ch <- prometheus.MustNewConstMetric(c.jobRefunds, prometheus.CounterValue, float64(c.pool.Refunded()))
	}
}

// collectQueue sends the queue's depth, with whether it could be read;
// nothing when the queue's driver cannot tell it.
func (c *opsCollector) collectQueue(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	st, err := c.queue.Stats(ctx)
	cancel()
	if errors.Is(err, jobs.ErrNoStats) {
		return
	}
	up := 1.0
	if err != nil {
		up = 0
	} else {
		ch <- prometheus.MustNewConstMetric(c.queueJobs, prometheus.GaugeValue, float64(st.Available), "available")
		ch <- prometheus.MustNewConstMetric(c.queueJobs, prometheus.GaugeValue, float64(st.Delayed), "delayed")
		ch <- prometheus.MustNewConstMetric(c.queueJobs, prometheus.GaugeValue, float64(st.Running), "running")
		age := 0.0
		if !st.OldestActive.IsZero() {
			age = max(c.now().Sub(st.OldestActive).Seconds(), 0)
		}
		ch <- prometheus.MustNewConstMetric(c.oldestActive, prometheus.GaugeValue, age)
	}
	ch <- prometheus.MustNewConstMetric(c.queueUp, prometheus.GaugeValue, up)
}
