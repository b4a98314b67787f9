// Command queuepeers drains the same number of jobs with the same number
// of workers through validmail's queue on PostgreSQL and on Redis and
// through two queues of the field, River (PostgreSQL) and asynq (Redis),
// one after the other in one run, and prints a table of jobs/s:
//
//	go run . -pg 'postgres://postgres@127.0.0.1:5432/test?sslmode=disable' -redis 'redis://127.0.0.1:6379/1'
//
// Each queue gets the jobs enqueued before its workers start, so only the
// drain is timed: lease, a handler that returns at once, completion. The
// peers run with their documented defaults but for the fetch pacing, set
// as low as they allow, so that none of them idles between fetches while
// jobs wait. Every queue works in a schema or key prefix of its own,
// removed afterwards. It is a module of its own: the peers are no
// dependency of validmail.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"text/tabwriter"
	"time"
)

// queue is one queue under test.
type queue struct {
	name string
	// drain enqueues jobs and returns how long its workers took to work
	// through them.
	drain func(ctx context.Context, o options) (time.Duration, error)
}

// options are a run's settings.
type options struct {
	pg, redis string
	jobs      int
	batch     int
	workers   int
	rounds    int
	logger    *slog.Logger
}

func main() {
	var o options
	var only string
	flag.StringVar(&o.pg, "pg", os.Getenv("VALIDMAIL_TEST_POSTGRES"), "PostgreSQL `URL` (River and validmail on PostgreSQL); empty skips them")
	flag.StringVar(&o.redis, "redis", os.Getenv("VALIDMAIL_TEST_REDIS"), "Redis `URL` (asynq and validmail on Redis); empty skips them")
	flag.IntVar(&o.jobs, "jobs", 20000, "jobs to drain per queue and round")
	flag.IntVar(&o.batch, "batch", 1000, "jobs per enqueue")
	flag.IntVar(&o.workers, "workers", 8, "workers of every queue")
	flag.IntVar(&o.rounds, "rounds", 3, "rounds; each round drains every queue once, in turn")
	flag.StringVar(&only, "only", "", "comma-separated queue names to run (default all)")
	flag.Parse()
	o.logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	if err := run(context.Background(), os.Stdout, o, only); err != nil {
		fmt.Fprintln(os.Stderr, "queuepeers:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, w io.Writer, o options, only string) error {
	if o.jobs < 1 || o.batch < 1 || o.workers < 1 || o.rounds < 1 {
		return errors.New("-jobs, -batch, -workers and -rounds must be positive")
	}
	var qs []queue
	if o.pg != "" {
		qs = append(qs, queue{"validmail PostgreSQL", drainValidmail(o.pg)}, queue{"River (PostgreSQL)", drainRiver})
	}
	if o.redis != "" {
		qs = append(qs, queue{"validmail Redis", drainValidmail(o.redis)}, queue{"asynq (Redis)", drainAsynq})
	}
	if only != "" {
		var keep []queue
		for _, q := range qs {
			for n := range strings.SplitSeq(only, ",") {
				if strings.EqualFold(strings.TrimSpace(n), q.name) {
					keep = append(keep, q)
				}
			}
		}
		qs = keep
	}
	if len(qs) == 0 {
		return errors.New("no queue to run: set -pg or -redis")
	}
	rates := make([][]float64, len(qs))
	for r := range o.rounds {
		for i, q := range qs {
			d, err := q.drain(ctx, o)
			if err != nil {
				return fmt.Errorf("%s, round %d: %w", q.name, r+1, err)
			}
			rates[i] = append(rates[i], float64(o.jobs)/d.Seconds())
			fmt.Fprintf(os.Stderr, "round %d: %-22s %8.0f jobs/s\n", r+1, q.name, rates[i][r])
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "queue\tjobs\tworkers\tjobs/s per round\t\n")
	for i, q := range qs {
		var cells []string
		for _, v := range rates[i] {
			cells = append(cells, fmt.Sprintf("%.0f", v))
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t\n", q.name, o.jobs, o.workers, strings.Join(cells, ", "))
	}
	return tw.Flush()
}

// waitDone waits until done has been called n times, or ctx ends.
func waitDone(ctx context.Context, done <-chan struct{}, n int) error {
	for range n {
		select {
		case <-done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// uniqueName returns a name for a run's schema or key prefix.
func uniqueName(kind string) string {
	return fmt.Sprintf("queuepeers_%s_%d", kind, time.Now().UnixNano())
}
