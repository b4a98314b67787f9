// Package client is a typed client of the validmail HTTP API, for Go
// programs that call a validmail deployment instead of embedding the
// validator:
//
//	c, err := client.New("https://validmail.example.org", os.Getenv("VALIDMAIL_API_KEY"), nil)
//	res, err := c.Validate(ctx, "jane@gmail.com")
//	for res, err := range c.ValidateList(ctx, slices.Values(addresses)) { ... }
//
// Requests answered 429 or 503 are retried after the server's Retry-After
// (bounded by [Options.MaxRetryWait]), and requests that are safe to
// repeat are retried after a network error; errors the server answered
// are [*Error], carrying the problem's code (errors.As).
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/validmail/validmail/emailcheck"
)

// Defaults of [Options].
const (
	DefaultMaxRetries   = 5
	DefaultMaxRetryWait = 30 * time.Second
)

// Options tunes a [Client]. The zero value gives the defaults.
type Options struct {
	// HTTPClient makes the requests. Default: a client with a 60 s
	// timeout.
	HTTPClient *http.Client
	// MaxRetries bounds the retries of one request. Default
	// [DefaultMaxRetries]; negative means none.
	MaxRetries int
	// MaxRetryWait bounds the wait before one retry, whatever Retry-After
	// asks. Default [DefaultMaxRetryWait].
	MaxRetryWait time.Duration
}

// Client calls one deployment with one API key. It is safe for concurrent
// use.
type Client struct {
	base     *url.URL
	key      string
	hc       *http.Client
	retries  int
	maxWait  time.Duration
	pollWait time.Duration // first wait between batch polls
}

// New returns a Client of the API at baseURL (for example
// "https://validmail.example.org", or one with a path prefix where the
// API is mounted) with apiKey.
func New(baseURL, apiKey string, opts *Options) (*Client, error) {
	u, err := url.Parse(strings.TrimSuffix(baseURL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("client: base URL %q: want http(s)://host[/prefix]", baseURL)
	}
	if apiKey == "" {
		return nil, errors.New("client: no API key")
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	c := &Client{base: u, key: apiKey, hc: o.HTTPClient, retries: o.MaxRetries, maxWait: o.MaxRetryWait, pollWait: 100 * time.Millisecond}
	if c.hc == nil {
		c.hc = &http.Client{Timeout: 60 * time.Second}
	}
	switch {
	case c.retries == 0:
		c.retries = DefaultMaxRetries
	case c.retries < 0:
		c.retries = 0
	}
	if c.maxWait <= 0 {
		c.maxWait = DefaultMaxRetryWait
	}
	return c, nil
}

// Error is a problem the API answered (RFC 9457), such as
// insufficient_credits or rate_limited.
type Error struct {
	// Status is the HTTP status.
	Status int
	// Code is the problem's code; Title and Detail say it in words.
	Code, Title, Detail string
	// RequestID names the request in the server's logs.
	RequestID string
	// RetryAfter is the server's Retry-After, if any.
	RetryAfter time.Duration
}

func (e *Error) Error() string {
	return fmt.Sprintf("validmail: %d %s: %s", e.Status, e.Code, e.Detail)
}

// request is one call: method, path (with query), JSON body (nil for
// none), extra headers, and whether it is safe to repeat after a network
// error.
type request struct {
	method, path string
	body         any
	header       map[string]string
	repeatable   bool
}

// do sends rq, retrying as the package doc says, and decodes a 2xx JSON
// answer into out (when not nil).
func (c *Client) do(ctx context.Context, rq request, out any) error {
	resp, err := c.send(ctx, rq)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("validmail: %s %s: decoding the answer: %w", rq.method, rq.path, err)
	}
	return nil
}

// send returns a 2xx response, whose body the caller closes.
func (c *Client) send(ctx context.Context, rq request) (*http.Response, error) {
	var payload []byte
	if rq.body != nil {
		var err error
		if payload, err = json.Marshal(rq.body); err != nil {
			return nil, err
		}
	}
	for attempt := 0; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, rq.method, c.base.String()+rq.path, bytes.NewReader(payload))
		if err != nil {
			return nil, err
		}
		req.Header.Set("x-api-key", c.key)
		req.Header.Set("Accept", "application/json")
		if payload != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		for k, v := range rq.header {
			req.Header.Set(k, v)
		}
		resp, err := c.hc.Do(req)
		if err != nil {
			if ctx.Err() != nil || !rq.repeatable || attempt >= c.retries || !retryableNetErr(err) {
				return nil, fmt.Errorf("validmail: %s %s: %w", rq.method, rq.path, err)
			}
			if err := c.sleep(ctx, backoff(attempt)); err != nil {
				return nil, err
			}
			continue
		}
		if resp.StatusCode/100 == 2 {
			return resp, nil
		}
		apiErr := readError(resp)
		resp.Body.Close()
		retry := resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable
		if !retry || attempt >= c.retries {
			return nil, apiErr
		}
		wait := apiErr.RetryAfter
		if wait <= 0 {
			wait = backoff(attempt)
		}
		if err := c.sleep(ctx, min(wait, c.maxWait)); err != nil {
			return nil, err
		}
	}
}

// retryableNetErr reports an error after which the request may not have
// reached the server, or its answer was lost.
func retryableNetErr(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		strings.Contains(err.Error(), "connection reset") || strings.Contains(err.Error(), "connection refused")
}

func backoff(attempt int) time.Duration {
	return min(100*time.Millisecond<<attempt, 5*time.Second)
}

func (c *Client) sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// readError reads a problem document.
func readError(resp *http.Response) *Error {
	e := &Error{Status: resp.StatusCode}
	var p struct {
		Code, Title, Detail string
		RequestID           string `json:"requestId"`
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if json.Unmarshal(body, &p) == nil {
		e.Code, e.Title, e.Detail, e.RequestID = p.Code, p.Title, p.Detail, p.RequestID
	}
	if e.Code == "" {
		e.Code = strings.ToLower(strings.ReplaceAll(http.StatusText(resp.StatusCode), " ", "_"))
	}
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s >= 0 {
		e.RetryAfter = time.Duration(s) * time.Second
	}
	return e
}

// Validate validates one address (GET /validate; 1 credit, refunded for
// UNKNOWN).
func (c *Client) Validate(ctx context.Context, email string) (emailcheck.Result, error) {
	var r emailcheck.Result
	err := c.do(ctx, request{method: "GET", path: "/validate?email=" + url.QueryEscape(email), repeatable: false}, &r)
	return r, err
}

// Submission is the answer to a batch submission.
type Submission struct {
	BatchID string   `json:"batch_id"`
	JobIDs  []string `json:"job_ids"`
}

// SubmitBatch submits up to 1,000 addresses (POST /validate/async). A
// non-empty idempotencyKey makes it safe to repeat: a repeat charges
// nothing and answers the same batch, so it is retried after network
// errors too.
func (c *Client) SubmitBatch(ctx context.Context, emails []string, idempotencyKey string) (Submission, error) {
	rq := request{method: "POST", path: "/validate/async", body: map[string]any{"emails": emails}, repeatable: idempotencyKey != ""}
	if idempotencyKey != "" {
		rq.header = map[string]string{"Idempotency-Key": idempotencyKey}
	}
	var s Submission
	err := c.do(ctx, rq, &s)
	return s, err
}

// Job is a job as GET /validate/status/{job_id} shows it.
type Job struct {
	ID     string             `json:"id"`
	State  string             `json:"state"`
	Result *emailcheck.Result `json:"result"`
}

// Job reads one job.
func (c *Client) Job(ctx context.Context, id string) (Job, error) {
	var j Job
	err := c.do(ctx, request{method: "GET", path: "/validate/status/" + url.PathEscape(id), repeatable: true}, &j)
	return j, err
}

// Batch is a batch's progress.
type Batch struct {
	BatchID     string         `json:"batch_id"`
	State       string         `json:"state"`
	CreatedAt   time.Time      `json:"created_at"`
	CompletedAt *time.Time     `json:"completed_at"`
	Total       int            `json:"total"`
	Completed   int            `json:"completed"`
	Counts      map[string]int `json:"counts"`
	Source      string         `json:"source"`
	// Name is the batch's name (a list's); Number counts the account's
	// batches from 1.
	Name   string `json:"name"`
	Number int64  `json:"number"`
}

// Batch reads one batch.
func (c *Client) Batch(ctx context.Context, id string) (Batch, error) {
	var b Batch
	err := c.do(ctx, request{method: "GET", path: "/api/v1/batches/" + url.PathEscape(id), repeatable: true}, &b)
	return b, err
}

// BatchPage is a page of the account's batches.
type BatchPage struct {
	Batches    []Batch `json:"batches"`
	NextCursor *string `json:"next_cursor"`
}

// Batches reads a page of the account's batches, newest first; cursor is
// "" for the first page, then the previous page's NextCursor.
func (c *Client) Batches(ctx context.Context, limit int, cursor string) (BatchPage, error) {
	var p BatchPage
	err := c.do(ctx, request{method: "GET", path: "/api/v1/batches" + pageQuery(limit, cursor), repeatable: true}, &p)
	return p, err
}

// pageQuery is the query string that asks for a page: "?limit=…&cursor=…"
// with what is set, "?" when nothing is.
func pageQuery(limit int, cursor string) string {
	q := url.Values{}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	return "?" + q.Encode()
}

// Result is one job of a batch's results.
type Result struct {
	JobID  string             `json:"job_id"`
	Email  string             `json:"email"`
	State  string             `json:"state"`
	Result *emailcheck.Result `json:"result"`
}

// ResultPage is a page of a batch's results, in submission order.
type ResultPage struct {
	Results    []Result `json:"results"`
	NextCursor *string  `json:"next_cursor"`
}

// Results reads a page of a batch's results.
func (c *Client) Results(ctx context.Context, batchID string, limit int, cursor string) (ResultPage, error) {
	var p ResultPage
	err := c.do(ctx, request{method: "GET", path: "/api/v1/batches/" + url.PathEscape(batchID) + "/results" + pageQuery(limit, cursor), repeatable: true}, &p)
	return p, err
}

// Account is the account of the key.
type Account struct {
	Email     string    `json:"email"`
	Balance   int64     `json:"balance"`
	Plan      string    `json:"plan"`
	CreatedAt time.Time `json:"created_at"`
}

// Account reads the key's account (GET /api/v1/account).
func (c *Client) Account(ctx context.Context) (Account, error) {
	var a Account
	err := c.do(ctx, request{method: "GET", path: "/api/v1/account", repeatable: true}, &a)
	return a, err
}
