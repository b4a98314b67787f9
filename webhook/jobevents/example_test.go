package jobevents_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/jobs"
	"github.com/validmail/validmail/store/memstore"
	"github.com/validmail/validmail/webhook"
	"github.com/validmail/validmail/webhook/jobevents"
)

// A Builder builds the events a completed job writes to the outbox, only
// for accounts with an enabled endpoint. A host wires it into its pool
// with Attach, which sets jobs.PoolConfig.NewEvents to this method.
func ExampleBuilder_NewEvents() {
	ctx := context.Background()
	w := memstore.NewBackend().Outbox.(*memstore.Webhooks)
	_, _, _ = w.PutEndpoint(ctx, webhook.PutEndpointParams{
		AccountID: "acct_1", URL: "https://hooks.example.org/validmail", Enabled: true,
		Secret: webhook.NewSecret(), Now: time.Now(),
	})
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	events, _ := jobevents.New(w, &jobevents.Config{Now: func() time.Time { return at }})

	res := emailcheck.Result{Email: "ada@example.org"}
	for _, account := range []string{"acct_1", "acct_2"} {
		job := jobs.Job{ID: "7", AccountID: account, Email: res.Email, State: jobs.StateCompleted, Result: &res}
		ev, _, err := events.NewEvents(ctx, job, res)
		if err != nil || ev == nil {
			fmt.Println(account, "no event", err)
			continue
		}
		var body struct {
			Type      string `json:"type"`
			Timestamp string `json:"timestamp"`
			Data      struct {
				JobID  string          `json:"job_id"`
				Result json.RawMessage `json:"result"`
			} `json:"data"`
		}
		_ = json.Unmarshal(ev.Payload, &body)
		fmt.Println(account, ev.Type, body.Timestamp, body.Data.JobID)
	}
	// Output:
	// acct_1 validation.completed 2030-01-02T03:04:05.000Z 7
	// acct_2 no event <nil>
}
