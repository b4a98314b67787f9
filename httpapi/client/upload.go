package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
)

// ListOptions describe an uploaded list.
type ListOptions struct {
	// Name names the list's batch (for example the file's name).
	Name string
	// Column names the address column: a header's name or a number from
	// 1. Empty: the API finds it.
	Column string
	// Text sends the file as text/plain, one address a line; else it is
	// CSV.
	Text bool
}

// ListSubmission is the API's answer to an uploaded list.
type ListSubmission struct {
	BatchID     string `json:"batch_id"`
	Name        string `json:"name"`
	Rows        int    `json:"rows"`
	Addresses   int    `json:"addresses"`
	Duplicates  int    `json:"duplicates"`
	InvalidRows int    `json:"invalid_rows"`
	Charged     int64  `json:"charged"`
}

// SubmitList streams a whole list (CSV, or text with opts.Text) to
// POST /api/v1/lists: one batch, one credit per unique address, charged
// with the batch or not at all. The body is read once, so the call is not
// retried; a large list needs an [Options.HTTPClient] whose timeout
// allows for its upload. Follow the batch with [Client.Batch] and fetch
// its rows with [Client.ListCSV].
func (c *Client) SubmitList(ctx context.Context, r io.Reader, opts *ListOptions) (ListSubmission, error) {
	var o ListOptions
	if opts != nil {
		o = *opts
	}
	q := url.Values{}
	if o.Name != "" {
		q.Set("name", o.Name)
	}
	if o.Column != "" {
		q.Set("column", o.Column)
	}
	path := "/api/v1/lists"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, "POST", c.base.String()+path, r)
	if err != nil {
		return ListSubmission{}, err
	}
	req.Header.Set("x-api-key", c.key)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Content-Type", "text/csv")
	if o.Text {
		req.Header.Set("Content-Type", "text/plain; charset=utf-8")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return ListSubmission{}, fmt.Errorf("validmail: POST %s: %w", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return ListSubmission{}, readError(resp)
	}
	var out ListSubmission
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return ListSubmission{}, fmt.Errorf("validmail: POST %s: decoding the answer: %w", path, err)
	}
	return out, nil
}

// ListCSV returns a batch's results as CSV: for a list, every uploaded row
// in order, its columns first, then the results' columns. group, when not
// empty, keeps one group: "safe", "risky" or "remove". The caller closes
// the body.
func (c *Client) ListCSV(ctx context.Context, batchID, group string) (io.ReadCloser, error) {
	path := "/api/v1/batches/" + url.PathEscape(batchID) + "/results?format=csv"
	if group != "" {
		path += "&group=" + url.QueryEscape(group)
	}
	resp, err := c.send(ctx, request{method: "GET", path: path, header: map[string]string{"Accept": "text/csv"}, repeatable: true})
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}
