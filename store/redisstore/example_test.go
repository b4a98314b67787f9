package redisstore_test

import (
	"context"
	"fmt"
	"log"

	"github.com/redis/go-redis/v9"
	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/jobs"
	"github.com/validmail/validmail/store"
	"github.com/validmail/validmail/store/redisstore"
)

// The host owns the client; the store only borrows it. One Store serves as
// the accounts store, the ledger's storage and the queue's driver.
func ExampleNew() {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	defer rdb.Close()
	s, err := redisstore.New(rdb, &redisstore.Config{Prefix: "validmail"})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	acct, err := s.CreateAccount(ctx, store.CreateAccountParams{Email: "owner@example.org"})
	if err != nil {
		log.Fatal(err)
	}
	q, err := jobs.NewQueue(s, credits.New(s, nil), nil)
	if err != nil {
		log.Fatal(err)
	}
	ids, err := q.EnqueueCharged(ctx, jobs.EnqueueChargedParams{AccountID: acct.ID, Emails: []string{"a@example.org"}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(ids))
}
