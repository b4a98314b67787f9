package redisstore_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"

	"github.com/redis/go-redis/v9"
	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/jobs"
	"github.com/validmail/validmail/store"
	"github.com/validmail/validmail/store/redisstore"
)

// The host owns the client; the store only borrows it. One Store serves as
// the accounts store, the ledger's storage and the queue's driver. The
// first start of a deployment initialises the store (Init, from the
// operator's command line); later starts refuse a store whose server lost
// its data.
func ExampleNew() {
	newDeployment := flag.Bool("store-init", false, "initialise a new store")
	flag.Parse()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	defer rdb.Close()
	s, err := redisstore.New(rdb, &redisstore.Config{Prefix: "validmail", Init: *newDeployment})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	if err := s.Setup(ctx); errors.Is(err, store.ErrDataLost) {
		log.Fatal("the Redis server lost the store's data, or this is a new deployment to start with -store-init: ", err)
	} else if err != nil {
		log.Fatal(err)
	}
	acct, err := s.CreateAccount(ctx, store.CreateAccountParams{Email: "owner@example.org"})
	if err != nil {
		log.Fatal(err)
	}
	b := s.Backend()
	q, err := jobs.NewQueue(b.Jobs, credits.New(b.Credits, nil), nil)
	if err != nil {
		log.Fatal(err)
	}
	ids, err := q.EnqueueCharged(ctx, jobs.EnqueueChargedParams{AccountID: acct.ID, Emails: []string{"a@example.org"}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(ids))
}
