package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/hibiken/asynq"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

// drainArgs is the River job: an address, as validmail's jobs carry.
type drainArgs struct {
	Email string `json:"email"`
}

func (drainArgs) Kind() string { return "drain" }

// drainWorker answers at once and counts its jobs.
type drainWorker struct {
	river.WorkerDefaults[drainArgs]
	done chan<- struct{}
}

func (w *drainWorker) Work(context.Context, *river.Job[drainArgs]) error {
	w.done <- struct{}{}
	return nil
}

// drainRiver drains River on PostgreSQL, in a schema of its own.
func drainRiver(ctx context.Context, o options) (time.Duration, error) {
	cfg, err := pgxpool.ParseConfig(o.pg)
	if err != nil {
		return 0, err
	}
	cfg.MaxConns = int32(o.workers + 8)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return 0, err
	}
	defer pool.Close()
	schema := uniqueName("river")
	if _, err := pool.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize()); err != nil {
		return 0, err
	}
	defer pool.Exec(context.WithoutCancel(ctx), "DROP SCHEMA "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
	driver := riverpgxv5.New(pool)
	m, err := rivermigrate.New(driver, &rivermigrate.Config{Schema: schema, Logger: o.logger})
	if err != nil {
		return 0, err
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return 0, err
	}
	done := make(chan struct{}, o.jobs)
	workers := river.NewWorkers()
	river.AddWorker(workers, &drainWorker{done: done})
	client, err := river.NewClient(driver, &river.Config{
		Schema:            schema,
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: o.workers}},
		Workers:           workers,
		FetchCooldown:     river.FetchCooldownMin,
		FetchPollInterval: 100 * time.Millisecond,
		Logger:            o.logger,
	})
	if err != nil {
		return 0, err
	}
	params := make([]river.InsertManyParams, 0, o.batch)
	for left := o.jobs; left > 0; left -= o.batch {
		params = params[:0]
		for i := range min(left, o.batch) {
			params = append(params, river.InsertManyParams{Args: drainArgs{Email: fmt.Sprintf("user%d@peers.example.org", i)}})
		}
		if _, err := client.InsertManyFast(ctx, params); err != nil {
			return 0, err
		}
	}
	start := time.Now()
	if err := client.Start(ctx); err != nil {
		return 0, err
	}
	err = waitDone(ctx, done, o.jobs)
	took := time.Since(start)
	if serr := client.Stop(ctx); err == nil {
		err = serr
	}
	return took, err
}

// drainAsynq drains asynq on Redis, under a key prefix of its own: asynq
// has none, so its queue gets a name of its own and the keys of that
// queue are removed afterwards.
func drainAsynq(ctx context.Context, o options) (time.Duration, error) {
	opt, err := redis.ParseURL(o.redis)
	if err != nil {
		return 0, err
	}
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	queueName := uniqueName("asynq")
	defer cleanup(context.WithoutCancel(ctx), "asynq", o.redis, queueName)
	client := asynq.NewClientFromRedisClient(rdb)
	// asynq enqueues one task per call: the enqueue runs on as many
	// goroutines as there are workers, before the server starts.
	var wg sync.WaitGroup
	errs := make(chan error, o.workers)
	per := (o.jobs + o.workers - 1) / o.workers
	for w := range o.workers {
		wg.Go(func() {
			for i := w * per; i < min(o.jobs, (w+1)*per); i++ {
				t := asynq.NewTask("drain", fmt.Appendf(nil, `{"email":"user%d@peers.example.org"}`, i))
				if _, err := client.EnqueueContext(ctx, t, asynq.Queue(queueName)); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return 0, err
	}
	done := make(chan struct{}, o.jobs)
	srv := asynq.NewServerFromRedisClient(rdb, asynq.Config{
		Concurrency:       o.workers,
		Queues:            map[string]int{queueName: 1},
		TaskCheckInterval: 100 * time.Millisecond,
		LogLevel:          asynq.FatalLevel,
	})
	mux := asynq.NewServeMux()
	mux.HandleFunc("drain", func(context.Context, *asynq.Task) error {
		done <- struct{}{}
		return nil
	})
	start := time.Now()
	if err := srv.Start(mux); err != nil {
		return 0, err
	}
	err = waitDone(ctx, done, o.jobs)
	took := time.Since(start)
	srv.Shutdown()
	return took, err
}

// cleanup removes a run's data: a PostgreSQL schema, or the Redis keys
// of a prefix (validmail) or queue name (asynq).
func cleanup(ctx context.Context, kind, rawURL, name string) {
	switch kind {
	case "postgres", "postgresql":
		pool, err := pgxpool.New(ctx, rawURL)
		if err != nil {
			return
		}
		defer pool.Close()
		pool.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{name}.Sanitize()+" CASCADE")
	default:
		opt, err := redis.ParseURL(rawURL)
		if err != nil {
			return
		}
		rdb := redis.NewClient(opt)
		defer rdb.Close()
		var keys []string
		iter := rdb.Scan(ctx, 0, "*"+name+"*", 1000).Iterator()
		for iter.Next(ctx) {
			if k := iter.Val(); strings.Contains(k, name) {
				keys = append(keys, k)
			}
		}
		for len(keys) > 0 {
			n := min(len(keys), 500)
			rdb.Unlink(ctx, keys[:n]...)
			keys = keys[n:]
		}
		if kind == "asynq" {
			rdb.SRem(ctx, "asynq:queues", name)
		}
	}
}
