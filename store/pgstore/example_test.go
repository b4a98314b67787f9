package pgstore_test

import (
	"context"
	"log"
	"os"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/jobs"
	"github.com/validmail/validmail/store/pgstore"
)

// The host owns the pool; the store migrates its schema and then serves as
// ledger storage and job queue driver.
func Example() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	s, err := pgstore.New(ctx, pool, &pgstore.Config{Schema: "validmail"})
	if err != nil {
		log.Fatal(err)
	}
	b := s.Backend()
	ledger := credits.New(b.Credits, nil)
	queue, err := jobs.NewQueue(b.Jobs, ledger, nil)
	if err != nil {
		log.Fatal(err)
	}
	_ = queue
}
