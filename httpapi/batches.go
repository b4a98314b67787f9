package httpapi

import (
	"bufio"
	"cmp"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/jobs"
	"github.com/validmail/validmail/jobs/lists"
	"github.com/validmail/validmail/webhook"
)

// Limits of the batch listings.
const (
	// DefaultBatchesLimit and MaxBatchesLimit bound GET /api/v1/batches.
	DefaultBatchesLimit = 20
	MaxBatchesLimit     = 100
	// DefaultResultsLimit and MaxResultsLimit bound a JSON page of
	// GET /api/v1/batches/{batch_id}/results.
	DefaultResultsLimit = 100
	MaxResultsLimit     = 1000
	// exportPage is how many jobs one read of a streamed export takes.
	exportPage = 200
)

type batchView struct {
	BatchID     string         `json:"batch_id"`
	State       jobs.State     `json:"state"`
	CreatedAt   string         `json:"created_at"`
	CompletedAt *string        `json:"completed_at"`
	Total       int            `json:"total"`
	Completed   int            `json:"completed"`
	Counts      map[string]int `json:"counts"`
	Source      string         `json:"source"`
	Name        string         `json:"name"`
	Number      int64          `json:"number"`
}

func viewBatch(b jobs.Batch) batchView {
	counts := make(map[string]int, len(b.Counts))
	for st, n := range b.Counts {
		counts[string(st)] = n
	}
	return batchView{
		BatchID:     b.ID,
		State:       b.State,
		CreatedAt:   formatTime(b.CreatedAt),
		CompletedAt: formatTimePtr(b.CompletedAt),
		Total:       b.Total,
		Completed:   b.Completed,
		Counts:      counts,
		Source:      cmp.Or(b.Source, jobs.SourceAPI),
		Name:        b.Name,
		Number:      b.Number,
	}
}

type batchViewResponse struct {
	batchView
	RequestID string `json:"requestId"`
}

type batchListResponse struct {
	Batches    []batchView `json:"batches"`
	NextCursor *string     `json:"next_cursor"`
	RequestID  string      `json:"requestId"`
}

type resultView struct {
	JobID  string             `json:"job_id"`
	Email  string             `json:"email"`
	State  jobs.State         `json:"state"`
	Result *emailcheck.Result `json:"result"`
	// Duplicates, in a deduplicated export, counts the address's other
	// jobs.
	Duplicates *int `json:"duplicates,omitempty"`
}

type resultListResponse struct {
	Results    []resultView `json:"results"`
	NextCursor *string      `json:"next_cursor"`
	RequestID  string       `json:"requestId"`
}

// pageLimit reads ?limit=, between 1 and most, default def.
func pageLimit(w http.ResponseWriter, r *http.Request, c *call, def, most int) (int, bool) {
	s := r.URL.Query().Get("limit")
	if s == "" {
		return def, true
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > most {
		writeProblem(w, c, CodeInvalidBody, "The limit query parameter must be an integer from 1 to "+strconv.Itoa(most)+".")
		return 0, false
	}
	return n, true
}

// idCursor reads ?cursor=, an opaque id this API gave.
func idCursor(w http.ResponseWriter, r *http.Request, c *call) (string, bool) {
	s := r.URL.Query().Get("cursor")
	if s == "" {
		return "", true
	}
	pos, ok := decodeCursor(s)
	if !ok || !numericID(pos.ID) {
		writeProblem(w, c, CodeInvalidBody, "The cursor query parameter is not one this API gave.")
		return "", false
	}
	return pos.ID, true
}

func (h *Handler) batchError(w http.ResponseWriter, c *call, op string, err error) {
	if errors.Is(err, jobs.ErrNotFound) {
		writeProblem(w, c, CodeBatchNotFound, "No batch with this id.")
		return
	}
	if errors.Is(err, jobs.ErrNoBatches) {
		writeProblem(w, c, CodeNotFound, "This deployment keeps no batches.")
		return
	}
	h.backendError(w, c, op, err)
}

// getBatch serves GET /api/v1/batches/{batch_id}.
func (h *Handler) getBatch(w http.ResponseWriter, r *http.Request, c *call) {
	b, err := h.queue.Batch(r.Context(), c.key.AccountID, r.PathValue("batch_id"))
	if err != nil {
		h.batchError(w, c, "batch", err)
		return
	}
	h.writeJSON(w, c, http.StatusOK, batchViewResponse{batchView: viewBatch(b), RequestID: c.id})
}

// deleteBatch serves DELETE /api/v1/batches/{batch_id}: the batch, its
// jobs and results, and a list's rows are erased at once (204); the
// ledger's charges and the usage counts stay.
func (h *Handler) deleteBatch(w http.ResponseWriter, r *http.Request, c *call) {
	err := h.queue.DeleteBatch(r.Context(), c.key.AccountID, r.PathValue("batch_id"))
	if errors.Is(err, jobs.ErrNoDelete) {
		w.Header().Set("Allow", "GET, HEAD")
		writeProblem(w, c, CodeMethodNotAllowed, "This deployment cannot delete batches; they go after the retention.")
		return
	}
	if err != nil {
		h.batchError(w, c, "delete batch", err)
		return
	}
	w.Header().Set("X-Request-Id", c.id)
	w.WriteHeader(http.StatusNoContent)
}

// listBatches serves GET /api/v1/batches: newest first, paged.
func (h *Handler) listBatches(w http.ResponseWriter, r *http.Request, c *call) {
	limit, ok := pageLimit(w, r, c, DefaultBatchesLimit, MaxBatchesLimit)
	if !ok {
		return
	}
	before, ok := idCursor(w, r, c)
	if !ok {
		return
	}
	bs, err := h.queue.Batches(r.Context(), jobs.BatchesParams{AccountID: c.key.AccountID, Limit: limit + 1, Before: before})
	if err != nil {
		h.batchError(w, c, "batches", err)
		return
	}
	resp := batchListResponse{Batches: []batchView{}, RequestID: c.id}
	if len(bs) > limit {
		bs = bs[:limit]
		next := encodeCursor(idPosition(bs[limit-1].ID))
		resp.NextCursor = &next
	}
	for _, b := range bs {
		resp.Batches = append(resp.Batches, viewBatch(b))
	}
	h.writeJSON(w, c, http.StatusOK, resp)
}

// statusFilter reads ?status=LIKELY,DISPOSABLE; nil means every status.
func statusFilter(r *http.Request) []emailcheck.Status {
	s := r.URL.Query().Get("status")
	if s == "" {
		return nil
	}
	var out []emailcheck.Status
	for f := range strings.SplitSeq(s, ",") {
		if f = strings.ToUpper(strings.TrimSpace(f)); f != "" {
			out = append(out, emailcheck.Status(f))
		}
	}
	return out
}

func keep(j jobs.Job, statuses []emailcheck.Status) bool {
	if statuses == nil {
		return true
	}
	return j.Result != nil && slices.Contains(statuses, j.Result.Confidence.Status)
}

// ndjsonType is the media type of the JSON Lines export, the one HTTP
// clients and generated code know as a stream of JSON values.
const ndjsonType = "application/x-ndjson"

// batchResults serves GET /api/v1/batches/{batch_id}/results: a JSON page,
// or the whole batch streamed as CSV (?format=csv or Accept: text/csv) or
// JSON Lines (?format=jsonl or Accept: application/x-ndjson, served as
// application/x-ndjson), in submission order, a page of jobs at a time so
// that a batch is never held in memory whole.
func (h *Handler) batchResults(w http.ResponseWriter, r *http.Request, c *call) {
	batchID := r.PathValue("batch_id")
	statuses := statusFilter(r)
	group, ok := groupFilter(w, r, c)
	if !ok {
		return
	}
	format := r.URL.Query().Get("format")
	if format == "" {
		switch accept := r.Header.Get("Accept"); {
		case strings.Contains(accept, "text/csv"):
			format = "csv"
		case strings.Contains(accept, ndjsonType), strings.Contains(accept, "application/jsonl"):
			format = "jsonl"
		}
	}
	f := ExportFilter{Group: group, Statuses: statuses}
	switch d := r.URL.Query().Get("dedupe"); d {
	case "", "false":
	case "true":
		f.Dedupe = true
	default:
		writeProblem(w, c, CodeInvalidBody, "The dedupe query parameter must be true or false.")
		return
	}
	switch rows := r.URL.Query().Get("rows"); rows {
	case "":
	case "junk":
		if format != "csv" && format != "xlsx" || group != "" || statuses != nil {
			writeProblem(w, c, CodeInvalidBody, "rows=junk exports a list's rows that are not addresses: add format=csv or xlsx, without status or group.")
			return
		}
		f.NotAddresses = true
	default:
		writeProblem(w, c, CodeInvalidBody, "The rows query parameter must be junk.")
		return
	}
	switch format {
	case "", "json":
		if f.Dedupe {
			writeProblem(w, c, CodeInvalidBody, "dedupe=true applies to a whole export: add format=csv, xlsx or jsonl.")
			return
		}
	case "csv", "xlsx":
		h.exportTable(w, r, c, batchID, format, f)
		return
	case "jsonl":
		h.exportResults(w, r, c, batchID, f)
		return
	default:
		writeProblem(w, c, CodeInvalidBody, "The format query parameter must be json, csv, xlsx or jsonl.")
		return
	}
	limit, ok := pageLimit(w, r, c, DefaultResultsLimit, MaxResultsLimit)
	if !ok {
		return
	}
	after, ok := idCursor(w, r, c)
	if !ok {
		return
	}
	resp := resultListResponse{Results: []resultView{}, RequestID: c.id}
	for {
		js, err := h.queue.BatchJobs(r.Context(), jobs.BatchJobsParams{AccountID: c.key.AccountID, BatchID: batchID, Limit: limit + 1, After: after})
		if err != nil {
			h.batchError(w, c, "batch results", err)
			return
		}
		for _, j := range js {
			if len(resp.Results) == limit {
				next := encodeCursor(idPosition(resp.Results[limit-1].JobID))
				resp.NextCursor = &next
				h.writeJSON(w, c, http.StatusOK, resp)
				return
			}
			if keep(j, statuses) && group.keepsJob(j) {
				resp.Results = append(resp.Results, viewResult(j))
			}
			after = j.ID
		}
		if len(js) <= limit {
			break
		}
	}
	h.writeJSON(w, c, http.StatusOK, resp)
}

func viewResult(j jobs.Job) resultView {
	v := resultView{JobID: j.ID, Email: j.Email, State: j.State}
	if j.State == jobs.StateCompleted {
		v.Result = j.Result
	}
	return v
}

// exportResults streams the batch's results as JSON Lines.
func (h *Handler) exportResults(w http.ResponseWriter, r *http.Request, c *call, batchID string, f ExportFilter) {
	ctx := r.Context()
	jobsAfter := func(after string) ([]jobs.Job, error) {
		return h.queue.BatchJobs(ctx, jobs.BatchJobsParams{AccountID: c.key.AccountID, BatchID: batchID, Limit: exportPage, After: after})
	}
	keeps := func(j jobs.Job) bool { return keep(j, f.Statuses) && f.Group.keepsJob(j) }
	var dd *dedupe
	if f.Dedupe {
		dd = newDedupe()
		for page, err := jobsAfter(""); ; page, err = jobsAfter(page[len(page)-1].ID) {
			if err != nil {
				h.batchError(w, c, "batch export", err)
				return
			}
			for _, j := range page {
				if keeps(j) {
					dd.count(lists.Key(j.Email))
				}
			}
			if len(page) < exportPage {
				break
			}
		}
	}
	first, err := jobsAfter("")
	if err != nil {
		h.batchError(w, c, "batch export", err)
		return
	}
	hd := w.Header()
	hd.Set("X-Request-Id", c.id)
	hd.Set("Cache-Control", "no-store")
	hd.Set("Content-Type", ndjsonType+"; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	c.code = ""
	bw := bufio.NewWriterSize(w, 64<<10)
	enc := json.NewEncoder(bw)
	page := first
	for len(page) > 0 {
		for _, j := range page {
			if !keeps(j) {
				continue
			}
			v := viewResult(j)
			if dd != nil {
				first, n := dd.first(lists.Key(j.Email))
				if !first {
					continue
				}
				v.Duplicates = &n
			}
			if err := enc.Encode(v); err != nil {
				return
			}
		}
		if len(page) < exportPage {
			break
		}
		next, err := jobsAfter(page[len(page)-1].ID)
		if err != nil {
			// The status line is sent: end the stream short, and log why.
			c.errText = "batch export: " + err.Error()
			break
		}
		page = next
	}
	bw.Flush()
}

// idPosition is a cursor position of an id alone.
func idPosition(id string) webhook.Position {
	return webhook.Position{CreatedAt: time.UnixMicro(0), ID: id}
}
