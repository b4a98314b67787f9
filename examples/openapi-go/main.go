// Command openapi-go drives a live validmaild through a client that
// oapi-codegen generated from the served OpenAPI document with its
// defaults (types and client): the four endpoints of the contract, then a
// list upload sent twice under one Idempotency-Key and its results. It
// exits non-zero at the first answer that is not the documented one. CI
// runs it against a fresh service; it is also a short tour of the
// generated client.
//
//	go generate   # or: go tool oapi-codegen -generate types,client -package vmapi -o vmapi/vmapi.gen.go DOC
//	go run . -url http://localhost:8080 -key vm_live_…
//
// The client lives in its own module, so that the library never depends
// on the generator or its runtime.
package main

//go:generate go tool oapi-codegen -generate types,client -package vmapi -o vmapi/vmapi.gen.go ../../httpapi/openapi.json

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/validmail/validmail/examples/openapi-go/vmapi"
)

// traceID is the caller's request id, which the API answers as requestId.
const traceID = "6f1c2a9e-3b7d-4c2e-9a51-0d2f8e4b7c13"

func main() {
	url := flag.String("url", "http://localhost:8080", "the API's base URL")
	key := flag.String("key", os.Getenv("VALIDMAIL_KEY"), "an API key with the validate, batch and stats permissions (default $VALIDMAIL_KEY)")
	timeout := flag.Duration("timeout", 2*time.Minute, "give up after this long")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	if err := run(ctx, *url, *key); err != nil {
		fmt.Fprintln(os.Stderr, "openapi-go:", err)
		os.Exit(1)
	}
	fmt.Println("openapi-go: every answer as documented")
}

func run(ctx context.Context, url, key string) error {
	c, err := vmapi.NewClientWithResponses(url, vmapi.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
		r.Header.Set("x-api-key", key)
		return nil
	}))
	if err != nil {
		return err
	}
	balance, err := account(ctx, c)
	if err != nil {
		return err
	}
	if err := validate(ctx, c); err != nil {
		return err
	}
	if err := batch(ctx, c); err != nil {
		return err
	}
	if err := list(ctx, c); err != nil {
		return err
	}
	after, err := account(ctx, c)
	if err != nil {
		return err
	}
	// One validation, a batch of two, a list of three charged once.
	if spent := balance - after; spent != 1+2+3 {
		return fmt.Errorf("%d credits spent, want 6", spent)
	}
	return nil
}

// account reads GET /api/v1/account and returns the balance.
func account(ctx context.Context, c *vmapi.ClientWithResponses) (int, error) {
	resp, err := c.GetAccountWithResponse(ctx)
	if err != nil {
		return 0, err
	}
	if resp.JSON200 == nil {
		return 0, unexpected("GET /api/v1/account", resp.HTTPResponse, resp.Body)
	}
	fmt.Printf("account %s: %d credits, plan %s\n", resp.JSON200.Email, resp.JSON200.Balance, resp.JSON200.Plan)
	return resp.JSON200.Balance, nil
}

// validate calls GET /validate with the caller's request id.
func validate(ctx context.Context, c *vmapi.ClientWithResponses) error {
	resp, err := c.ValidateWithResponse(ctx, &vmapi.ValidateParams{Email: "jane.doe@example.com"}, func(_ context.Context, r *http.Request) error {
		r.Header.Set("X-Request-Id", traceID)
		return nil
	})
	if err != nil {
		return err
	}
	if resp.JSON200 == nil {
		return unexpected("GET /validate", resp.HTTPResponse, resp.Body)
	}
	if got := resp.JSON200.RequestId.String(); got != traceID {
		return fmt.Errorf("GET /validate: requestId %s, want the caller's %s", got, traceID)
	}
	fmt.Printf("validate %s: %s (%s)\n", resp.JSON200.Email, resp.JSON200.Confidence.Status, resp.JSON200.Reason)
	return nil
}

// batch submits two addresses and polls each job until it completes.
func batch(ctx context.Context, c *vmapi.ClientWithResponses) error {
	resp, err := c.SubmitBatchWithResponse(ctx, &vmapi.SubmitBatchParams{}, vmapi.SubmitBatchJSONRequestBody{Emails: []string{"a@example.org", "b@example.org"}})
	if err != nil {
		return err
	}
	if resp.JSON202 == nil {
		return unexpected("POST /validate/async", resp.HTTPResponse, resp.Body)
	}
	for _, id := range resp.JSON202.JobIds {
		err := poll(ctx, "job "+id, func() (bool, error) {
			st, err := c.JobStatusWithResponse(ctx, id)
			if err != nil {
				return false, err
			}
			if st.JSON200 == nil {
				return false, unexpected("GET /validate/status/"+id, st.HTTPResponse, st.Body)
			}
			return st.JSON200.State == vmapi.JobResponseStateCompleted && st.JSON200.Result != nil, nil
		})
		if err != nil {
			return err
		}
	}
	fmt.Printf("batch %s: %d jobs completed\n", resp.JSON202.BatchId, resp.JSON202.JobCount)
	return nil
}

// list uploads a CSV twice under one Idempotency-Key (one batch, one
// charge), waits for its batch and reads its results as CSV.
func list(ctx context.Context, c *vmapi.ClientWithResponses) error {
	const file = "email,name\nann@example.org,Ann\nbob@example.org,Bob\nANN@example.org,Ann again\ncid@example.org,Cid\n"
	key := fmt.Sprintf("openapi-go-%d", time.Now().UnixNano())
	var first *vmapi.ListResponse
	for range 2 {
		resp, err := c.SubmitListWithBodyWithResponse(ctx, &vmapi.SubmitListParams{IdempotencyKey: &key}, "text/csv", strings.NewReader(file))
		if err != nil {
			return err
		}
		if resp.JSON202 == nil {
			return unexpected("POST /api/v1/lists", resp.HTTPResponse, resp.Body)
		}
		if first == nil {
			first = resp.JSON202
		} else if resp.JSON202.BatchId != first.BatchId || resp.JSON202.Charged != first.Charged {
			return fmt.Errorf("the upload repeated under its key answered batch %s, want %s", resp.JSON202.BatchId, first.BatchId)
		}
	}
	if first.Rows != 4 || first.Addresses != 3 || first.Charged != 3 {
		return fmt.Errorf("list: %+v", *first)
	}
	err := poll(ctx, "list "+first.BatchId, func() (bool, error) {
		b, err := c.GetBatchWithResponse(ctx, first.BatchId)
		if err != nil {
			return false, err
		}
		if b.JSON200 == nil {
			return false, unexpected("GET /api/v1/batches/"+first.BatchId, b.HTTPResponse, b.Body)
		}
		return b.JSON200.State == vmapi.BatchViewResponseStateCompleted, nil
	})
	if err != nil {
		return err
	}
	format := vmapi.Csv
	res, err := c.GetBatchResultsWithResponse(ctx, first.BatchId, &vmapi.GetBatchResultsParams{Format: &format})
	if err != nil {
		return err
	}
	if res.StatusCode() != http.StatusOK || !strings.HasPrefix(res.HTTPResponse.Header.Get("Content-Type"), "text/csv") {
		return unexpected("GET /api/v1/batches/"+first.BatchId+"/results?format=csv", res.HTTPResponse, res.Body)
	}
	lines := strings.Split(strings.TrimSpace(string(res.Body)), "\n")
	if len(lines) != 5 || !strings.HasPrefix(lines[0], "email,name,") {
		return fmt.Errorf("results CSV: %q", res.Body)
	}
	fmt.Printf("list %s: %d rows, %d addresses, %d credits; results: %d CSV lines\n", first.BatchId, first.Rows, first.Addresses, first.Charged, len(lines))
	return nil
}

// poll calls done until it reports true, the context ends or it fails.
func poll(ctx context.Context, what string, done func() (bool, error)) error {
	for {
		ok, err := done()
		if err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w", what, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func unexpected(what string, r *http.Response, body []byte) error {
	return fmt.Errorf("%s: %s %s", what, r.Status, body)
}
