package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/validmail/validmail/emailcheck"
)

// startDisposableList opens the operator's disposable list of cfg
// (-disposable-list), reads it once, and checks it every
// -disposable-list-interval on a goroutine until ctx ends or stop is
// called; stop ends that goroutine and waits for it. Its size, age and checks are exported on reg when it is
// set. With no list configured it returns nil and a no-op stop.
func startDisposableList(ctx context.Context, cfg config, reg prometheus.Registerer, logger *slog.Logger) (feed *emailcheck.DisposableFeed, stop func(), err error) {
	if cfg.DisposableList == "" {
		return nil, func() {}, nil
	}
	feed, err = emailcheck.NewDisposableFeed(cfg.DisposableList, &emailcheck.FeedConfig{Interval: cfg.DisposableListInterval, Logger: logger})
	if err != nil {
		return nil, nil, fmt.Errorf("%w: -disposable-list: %w", errUsage, err)
	}
	if reg != nil {
		if err := registerFeedMetrics(reg, feed); err != nil {
			return nil, nil, err
		}
	}
	// The first read before serving, so that the list applies from the
	// first request; a failure leaves the embedded lists alone in force
	// until a later check succeeds.
	rctx, cancel := context.WithTimeout(ctx, emailcheck.DefaultFeedTimeout)
	if err := feed.Reload(rctx); err != nil {
		logger.Warn("disposable list not loaded: the embedded lists alone apply until it is", "source", cfg.DisposableList, "err", err)
	}
	cancel()
	ctx, cancelRun := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		// Run checks at once, then every interval: wait one interval
		// first, the list having just been read.
		select {
		case <-ctx.Done():
			return
		case <-time.After(cfg.DisposableListInterval):
		}
		_ = feed.Run(ctx)
	}()
	return feed, func() { cancelRun(); <-done }, nil
}

// registerFeedMetrics exports a disposable list's state on reg.
func registerFeedMetrics(reg prometheus.Registerer, feed *emailcheck.DisposableFeed) error {
	unix := func(t time.Time) float64 {
		if t.IsZero() {
			return 0
		}
		return float64(t.UnixNano()) / 1e9
	}
	cs := []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "validmail_disposable_list_domains",
			Help: "Domains on the operator's disposable list in use (-disposable-list); 0 before one is loaded."},
			func() float64 { return float64(feed.Stats().Domains) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "validmail_disposable_list_loaded_timestamp_seconds",
			Help: "When the disposable list in use was loaded (Unix time); 0 before one is."},
			func() float64 { return unix(feed.Stats().LoadedAt) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "validmail_disposable_list_age_seconds",
			Help: "Age of the disposable list in use: since its source's last change (file time or Last-Modified), else since it was loaded; 0 before one is."},
			func() float64 {
				st := feed.Stats()
				t := st.ModifiedAt
				if t.IsZero() {
					t = st.LoadedAt
				}
				if t.IsZero() {
					return 0
				}
				return time.Since(t).Seconds()
			}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "validmail_disposable_list_checked_timestamp_seconds",
			Help: "When the disposable list's source was last checked (Unix time), whatever came of it."},
			func() float64 { return unix(feed.Stats().CheckedAt) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "validmail_disposable_list_loads_total",
			Help: "Disposable lists loaded in place of the one in use."},
			func() float64 { return float64(feed.Stats().Loads) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "validmail_disposable_list_refused_total",
			Help: "Disposable lists refused by their checks (size, format, shrinking by more than half); the one in use was kept."},
			func() float64 { return float64(feed.Stats().Refused) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "validmail_disposable_list_failures_total",
			Help: "Checks of the disposable list's source that could not read it."},
			func() float64 { return float64(feed.Stats().Failures) }),
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("disposable list metrics: %w", err)
		}
	}
	return nil
}
