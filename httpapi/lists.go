package httpapi

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/emailcheck/resultcsv"
	"github.com/validmail/validmail/httpapi/internal/uploads"
	"github.com/validmail/validmail/jobs"
	"github.com/validmail/validmail/jobs/lists"
	"github.com/validmail/validmail/store/ratelimit"
)

// DefaultMaxListUploads is how many lists a handler reads at once by
// default. Each holds a spool file of up to the list bounds' MaxBytes
// (256 MiB by default) while it is read, so the uploads in progress take
// at most MaxListUploads × MaxBytes of the temporary directory's disk:
// 4 GiB with the defaults.
const DefaultMaxListUploads = 16

// MaxListUploadsPerAccount is how many of a handler's list uploads one
// account may hold at once, so that one account cannot take them all.
const MaxListUploadsPerAccount = 2

// DefaultMaxListUploadsPerNetwork is how many of a handler's list uploads
// one client network (an IPv4 /24, an IPv6 /64: [ratelimit.ClientKey])
// may hold at once by default, every account's together.
const DefaultMaxListUploadsPerNetwork = 4

// DefaultListHealthyRate is the average rate, in bytes a second, at which
// a list upload never loses its slot to a newer one by default: 1 MiB/s.
const DefaultListHealthyRate = 1 << 20

// listUploadSettings returns the slots' bounds and the pace of list
// uploads that cfg asks for, with the defaults applied, for a part that
// reads lists as the API does (the console).
func listUploadSettings(total, perNetwork int, healthy int64, grace time.Duration, pace uploads.Pace, now func() time.Time) (*uploads.Slots, uploads.Pace) {
	pace = pace.OrDefault()
	if total <= 0 {
		total = DefaultMaxListUploads
	}
	if perNetwork == 0 {
		perNetwork = DefaultMaxListUploadsPerNetwork
	}
	if healthy <= 0 {
		healthy = DefaultListHealthyRate
	}
	if grace <= 0 {
		grace = pace.Window
	}
	return uploads.NewSlots(&uploads.Config{Total: total, PerAccount: MaxListUploadsPerAccount, PerNetwork: perNetwork,
		HealthyRate: healthy, Grace: grace, Now: now}), pace
}

// maxListName bounds ?name=, ?column= and a multipart file's name, in
// characters (as the OpenAPI document's maxLength counts them).
const maxListName = 200

// tooLongName reports whether a list's name or column is longer than
// maxListName characters.
func tooLongName(s string) bool {
	return len(s) > utf8.UTFMax*maxListName || utf8.RuneCountInString(s) > maxListName
}

// multipartSlack is what a multipart body may hold beyond the file: the
// boundaries and part headers.
const multipartSlack = 64 << 10

func (h *Handler) setupLists(cfg *Config) {
	if cfg.Lists != nil {
		h.listOpts = *cfg.Lists
	}
	h.listSlots, h.listPace = listUploadSettings(cfg.MaxListUploads, cfg.MaxListUploadsPerNetwork, cfg.ListHealthyRate, cfg.ListEvictAfter,
		uploads.Pace{Window: cfg.ListReadWindow, MinBytes: cfg.ListReadMinBytes, MaxDuration: cfg.ListMaxDuration}, h.now)
}

type listResponse struct {
	BatchID     string `json:"batch_id"`
	Name        string `json:"name"`
	Rows        int    `json:"rows"`
	Addresses   int    `json:"addresses"`
	Duplicates  int    `json:"duplicates"`
	InvalidRows int    `json:"invalid_rows"`
	Charged     int64  `json:"charged"`
	RequestID   string `json:"requestId"`
}

// submitList serves POST /api/v1/lists: a whole file (text/csv,
// text/plain, or multipart/form-data with a "file" part) read into a
// spool, then submitted as one batch of one job per unique address.
func (h *Handler) submitList(w http.ResponseWriter, r *http.Request, c *call) {
	idemKey, ok := idempotencyKey(w, r, c)
	if !ok {
		return
	}
	up, ok := h.listQuery(w, c, r.URL.Query())
	if !ok {
		return
	}
	maxBytes := up.opts.MaxBytes
	if maxBytes <= 0 {
		maxBytes = lists.DefaultMaxBytes
	}
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil && r.Header.Get("Content-Type") != "" {
		writeProblem(w, c, CodeUnsupportedMediaType, "Send the list as text/csv, text/plain, "+XLSXContentType+" or multipart/form-data.")
		return
	}
	slot, ok := h.takeListSlot(w, r, c)
	if !ok {
		return
	}
	defer slot.Release()
	// The upload lives past the server's read timeout while it keeps
	// sending at the pace, and ends when its slot goes to a faster one.
	paced := uploads.NewReader(w, r.Body, h.listPace, slot)
	defer paced.Done()
	body, part, ok := up.file(w, c, http.MaxBytesReader(w, io.NopCloser(paced), maxBytes+multipartSlack), mt, params, paced)
	if !ok {
		return
	}
	if part != nil {
		defer part.Close()
	}
	ctx := r.Context()
	content := sha256.New()
	if idemKey != "" {
		body = io.TeeReader(body, content)
	}
	sp, ok := h.readList(ctx, w, c, body, paced, &up)
	if !ok {
		return
	}
	defer sp.Close()
	// The body is in, unless the slot was taken from it meanwhile. The
	// slot goes back now: what the store takes to ingest the list (rows
	// that cost nothing to send may cost seconds to stage) is bounded per
	// account below, never at the other accounts' uploads' expense.
	paced.Done()
	if err := paced.Err(); err != nil {
		endedUpload(w, c, err)
		return
	}
	slot.Release()
	h.submitSpool(ctx, w, c, sp, up, idemKey, content)
}

// listUpload is what a list upload asks for: the list's name, how to
// read it, and whether it is an XLSX workbook.
type listUpload struct {
	name string
	opts lists.Options
	xlsx bool
}

// listQuery reads the name, column and sheet query parameters of a list
// upload over the handler's list options. It answers a problem and
// reports false when one of them is not acceptable.
func (h *Handler) listQuery(w http.ResponseWriter, c *call, q url.Values) (listUpload, bool) {
	up := listUpload{name: q.Get("name"), opts: h.listOpts}
	if tooLongName(up.name) || !cleanText(up.name) {
		writeProblem(w, c, CodeInvalidBody, "The name query parameter must be text without control characters, at most "+strconv.Itoa(maxListName)+" characters.")
		return listUpload{}, false
	}
	up.opts.Column, up.opts.Sheet = q.Get("column"), q.Get("sheet")
	if tooLongName(up.opts.Column) || !cleanText(up.opts.Column) || tooLongName(up.opts.Sheet) || !cleanText(up.opts.Sheet) {
		writeProblem(w, c, CodeInvalidBody, "The column and sheet query parameters must each be a name or a number, at most "+strconv.Itoa(maxListName)+" characters.")
		return listUpload{}, false
	}
	if len(up.opts.Sheet) > maxListName || !cleanText(up.opts.Sheet) {
		writeProblem(w, c, CodeInvalidBody, "The sheet query parameter must be a sheet's name or number.")
		return listUpload{}, false
	}
	return up, true
}

// takeListSlot takes an upload slot for the request's account and
// network before a byte of the body is read: a slow upload holds it
// only until a faster one needs it. When none is free it answers 429,
// without reading the body, and reports false.
func (h *Handler) takeListSlot(w http.ResponseWriter, r *http.Request, c *call) (*uploads.Slot, bool) {
	slot, why := h.listSlots.Take(c.key.AccountID, ratelimit.ClientKey(h.clientIP(r)))
	if why != uploads.Granted {
		// The body is not read: the server must not wait for the rest
		// of it (a trickle) before answering.
		w.Header().Set("Connection", "close")
	}
	switch why {
	case uploads.AccountBusy:
		w.Header().Set("Retry-After", "5")
		writeProblem(w, c, CodeRateLimited, "This account is uploading "+strconv.Itoa(MaxListUploadsPerAccount)+" lists already; send this one when one of them is done.")
		return nil, false
	case uploads.NetworkBusy:
		w.Header().Set("Retry-After", "5")
		writeProblem(w, c, CodeRateLimited, "Too many lists are being uploaded from your network; send this one when one of them is done.")
		return nil, false
	case uploads.InstanceBusy:
		w.Header().Set("Retry-After", "5")
		writeProblem(w, c, CodeRateLimited, "Too many lists are being uploaded; retry shortly.")
		return nil, false
	}
	return slot, true
}

// file returns the list's bytes within body, sent as the media type mt
// with its params: body itself, or the "file" part of a multipart form
// (returned too, for the caller to close), whose file name names the
// list when the query did not. It sets how the list is read from the
// media type (and a part's file name), and answers a problem and
// reports false for a media type it does not take.
func (up *listUpload) file(w http.ResponseWriter, c *call, body io.Reader, mt string, params map[string]string, paced *uploads.Reader) (io.Reader, *multipart.Part, bool) {
	switch mt {
	case "", "text/csv", "application/csv", "text/comma-separated-values", "application/vnd.ms-excel":
	case "text/plain":
		up.opts.Text = true
	case XLSXContentType:
		up.xlsx = true
	case "multipart/form-data":
		part, ok := filePart(w, c, multipart.NewReader(body, params["boundary"]), paced)
		if !ok {
			return nil, nil, false
		}
		fname := path.Base(strings.ReplaceAll(part.FileName(), `\`, "/"))
		if up.name == "" && fname != "." && fname != "/" && !tooLongName(fname) && cleanText(fname) {
			up.name = fname
		}
		pt, _, _ := mime.ParseMediaType(part.Header.Get("Content-Type"))
		switch {
		case pt == XLSXContentType || strings.HasSuffix(strings.ToLower(fname), ".xlsx"):
			up.xlsx = true
		case pt == "text/plain" || strings.HasSuffix(strings.ToLower(fname), ".txt"):
			up.opts.Text = true
		}
		return part, part, true
	default:
		writeProblem(w, c, CodeUnsupportedMediaType, "Send the list as text/csv, text/plain, "+XLSXContentType+" or multipart/form-data.")
		return nil, nil, false
	}
	return body, nil, true
}

// readList reads the list in body into a spool, as up says. When it
// cannot, it answers why (an upload ended for its pace, a client that
// hung up, or the list's own fault) and reports false.
func (h *Handler) readList(ctx context.Context, w http.ResponseWriter, c *call, body io.Reader, paced *uploads.Reader, up *listUpload) (*lists.Spool, bool) {
	read := lists.Read
	if up.xlsx {
		read = lists.ReadXLSX
	}
	sp, err := read(ctx, body, &up.opts)
	if err != nil {
		switch {
		case paced.Err() != nil:
			endedUpload(w, c, paced.Err())
		case ctx.Err() != nil:
			// The client hung up (an HTTP/2 stream reset cancels the
			// request as its body fails): its doing, not the service's.
			writeProblem(w, c, CodeInvalidBody, "The request was cancelled before its body was in. Nothing was submitted.")
		default:
			h.listError(w, c, err)
		}
		return nil, false
	}
	return sp, true
}

// submitSpool submits the list read into sp as one batch and answers
// 202 with what it holds. It bounds the lists an account submits at
// once, and refuses an account without a credit before its rows are
// staged. Under an Idempotency-Key (idemKey), content holds the hash of
// the bytes sent, which fingerprints the request.
func (h *Handler) submitSpool(ctx context.Context, w http.ResponseWriter, c *call, sp *lists.Spool, up listUpload, idemKey string, content hash.Hash) {
	if !h.listSubmits.take(c.key.AccountID, MaxListUploadsPerAccount) {
		w.Header().Set("Retry-After", "5")
		writeProblem(w, c, CodeRateLimited, "This account is submitting "+strconv.Itoa(MaxListUploadsPerAccount)+" lists already; send this one when one of them is done.")
		return
	}
	defer h.listSubmits.done(c.key.AccountID)
	if idemKey == "" {
		// An account without a credit is told so before its rows are
		// staged (a replay under an Idempotency-Key is answered by the
		// store, whatever the balance now).
		if bal, err := h.ledger.Balance(ctx, c.key.AccountID); err == nil && bal < 1 {
			h.listError(w, c, &credits.InsufficientError{Balance: bal, Required: 1})
			return
		}
	}
	sub := lists.SubmitParams{AccountID: c.key.AccountID, Name: up.name}
	if idemKey != "" {
		sub.IdempotencyKey = "list:" + idemKey
		sub.Fingerprint = listFingerprint(content.Sum(nil), up.name, up.opts)
	}
	info, err := lists.Submit(ctx, h.queue, sp, sub)
	if err != nil {
		h.listError(w, c, err)
		return
	}
	if h.metrics != nil && !info.Replayed {
		h.metrics.credits.Add(float64(info.Charged))
	}
	h.writeJSON(w, c, http.StatusAccepted, listResponse{
		BatchID: info.BatchID, Name: info.Name, Rows: info.Rows, Addresses: info.Addresses,
		Duplicates: info.Duplicates, InvalidRows: info.InvalidRows, Charged: info.Charged, RequestID: c.id,
	})
}

// accountGate counts, per account, the holders of something bounded per
// account; the zero value is ready.
type accountGate struct {
	mu sync.Mutex
	n  map[string]int
}

// take counts one more holder for account unless it has max already.
func (g *accountGate) take(account string, max int) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.n[account] >= max {
		return false
	}
	if g.n == nil {
		g.n = make(map[string]int)
	}
	g.n[account]++
	return true
}

// done counts one holder of account less.
func (g *accountGate) done(account string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.n[account]--; g.n[account] <= 0 {
		delete(g.n, account)
	}
}

// listFingerprint names a list's content for its idempotency key: the
// SHA-256 of the file as read (the bytes of the file part of a multipart
// body, so that a new boundary makes no other list) and of what changes
// how it reads: its name, address column and text mode.
func listFingerprint(content []byte, name string, opts lists.Options) string {
	h := sha256.New()
	h.Write(content)
	fmt.Fprintf(h, "\x00%q\x00%q\x00%t\x00%q", name, opts.Column, opts.Text, opts.Sheet)
	return hex.EncodeToString(h.Sum(nil))
}

// endedUpload answers an upload that the server ended (an error of
// [uploads.Reader.Err]): nothing was submitted nor charged.
func endedUpload(w http.ResponseWriter, c *call, err error) {
	w.Header().Set("Connection", "close")
	switch {
	case errors.Is(err, uploads.ErrEvicted):
		w.Header().Set("Retry-After", "5")
		writeProblem(w, c, CodeRateLimited, "The upload was too slow to keep its place while other lists waited: it was ended. Nothing was submitted; send the list again, faster.")
	case errors.Is(err, uploads.ErrTooLong):
		writeProblem(w, c, CodeRequestTimeout, "The upload took longer than a list upload may. Nothing was submitted; send the list again, faster, or split it.")
	default:
		writeProblem(w, c, CodeRequestTimeout, "The upload stalled: its bytes stopped arriving fast enough. Nothing was submitted; send the list again.")
	}
}

// filePart returns the multipart body's part named "file", skipping
// others (each within a bound).
func filePart(w http.ResponseWriter, c *call, mr *multipart.Reader, paced *uploads.Reader) (*multipart.Part, bool) {
	for range 16 {
		part, err := mr.NextPart()
		if err != nil {
			if paced.Err() != nil {
				endedUpload(w, c, paced.Err())
				return nil, false
			}
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				writeProblem(w, c, CodeBodyTooLarge, "The list is too large.")
				return nil, false
			}
			writeProblem(w, c, CodeInvalidBody, "The multipart body has no part named file.")
			return nil, false
		}
		if part.FormName() == "file" {
			return part, true
		}
		if _, err := io.CopyN(io.Discard, part, multipartSlack); err == nil {
			writeProblem(w, c, CodeInvalidBody, "A multipart field other than file is too long.")
			return nil, false
		}
		part.Close()
	}
	writeProblem(w, c, CodeInvalidBody, "The multipart body has too many parts.")
	return nil, false
}

// listError answers a list that could not be read or submitted: the
// customer's mistakes are 4xx, with the line at fault.
func (h *Handler) listError(w http.ResponseWriter, c *call, err error) {
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe), errors.Is(err, lists.ErrTooLarge):
		writeProblem(w, c, CodeBodyTooLarge, "The list is too large.")
	case errors.Is(err, lists.ErrNoColumn):
		writeProblem(w, c, CodeNoEmailColumn, "No column of addresses was found: "+err.Error()+". Name it with the column query parameter (a header's name or a number from 1).")
	case errors.Is(err, lists.ErrTooManyRows):
		writeProblem(w, c, CodeTooManyRows, "The list has too many rows: "+err.Error()+".")
	case errors.Is(err, lists.ErrNoRows), errors.Is(err, jobs.ErrEmptyBatch):
		writeProblem(w, c, CodeEmptyBatch, "The list holds no address.")
	case errors.Is(err, lists.ErrBadEncoding), errors.Is(err, lists.ErrNUL), errors.Is(err, lists.ErrBadQuote),
		errors.Is(err, lists.ErrLineTooLong), errors.Is(err, lists.ErrTooManyColumns), errors.Is(err, lists.ErrBadWorkbook):
		writeProblem(w, c, CodeInvalidList, "The list cannot be read: "+err.Error()+".")
	case errors.Is(err, credits.ErrInsufficient):
		h.chargeError(w, c, err)
	case errors.Is(err, credits.ErrIdempotencyConflict):
		writeProblem(w, c, CodeIdempotencyKeyReused, "This Idempotency-Key was used with another list.")
	case errors.Is(err, jobs.ErrBatchReplayed):
		writeProblem(w, c, CodeIdempotencyKeyReused, "This Idempotency-Key was already used; the list was accepted and not charged again.")
	case errors.Is(err, jobs.ErrNoLists):
		writeProblem(w, c, CodeNotFound, "This deployment keeps no lists.")
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, multipart.ErrMessageTooLarge):
		writeProblem(w, c, CodeInvalidBody, "The body ended early.")
	default:
		var pe *lists.ParseError
		if errors.As(err, &pe) {
			// The request body could not be read: the client went away
			// or sent a broken stream.
			writeProblem(w, c, CodeInvalidBody, "The body could not be read.")
			return
		}
		h.backendError(w, c, "list", err)
	}
}

// Group names a download of results by what to do with them.
type Group string

// Groups of results.
const (
	// GroupSafe: safe to send, LIKELY and DELIVERABLE addresses that are
	// not role-based.
	GroupSafe Group = "safe"
	// GroupRisky: CATCH_ALL, UNKNOWN, and role-based addresses that are
	// not to be removed.
	GroupRisky Group = "risky"
	// GroupRemove: every other result, and rows that are not addresses.
	GroupRemove Group = "remove"
)

// GroupOf returns the group of a result; nil (a row that is not an
// address) is [GroupRemove].
func GroupOf(res *emailcheck.Result) Group {
	if res == nil {
		return GroupRemove
	}
	switch res.Confidence.Status {
	case emailcheck.StatusLikely, emailcheck.StatusDeliverable:
		if res.Confidence.IsRoleBased {
			return GroupRisky
		}
		return GroupSafe
	case emailcheck.StatusCatchAll, emailcheck.StatusUnknown:
		return GroupRisky
	}
	return GroupRemove
}

// groupFilter reads ?group=; "" keeps every result.
func groupFilter(w http.ResponseWriter, r *http.Request, c *call) (Group, bool) {
	g := Group(strings.ToLower(r.URL.Query().Get("group")))
	switch g {
	case "", GroupSafe, GroupRisky, GroupRemove:
		return g, true
	}
	writeProblem(w, c, CodeInvalidBody, "The group query parameter must be safe, risky or remove.")
	return "", false
}

// keepsJob tells whether a job belongs in a download of group g: a job
// still active belongs to no group.
func (g Group) keepsJob(j jobs.Job) bool {
	if g == "" {
		return true
	}
	return j.State == jobs.StateCompleted && j.Result != nil && GroupOf(j.Result) == g
}

// ListCSVHeader returns the header of a list's CSV export: the uploaded
// columns (escaped as their cells are, see [ListCSVRecord]), then the
// result's ([resultcsv.Columns]; a name the upload already uses gets a
// "validmail_" prefix), then state.
func ListCSVHeader(uploaded []string) []string { return resultcsv.Header(uploaded, "state") }

// ListCSVRecord returns a list row's record of the CSV export: its
// uploaded fields (as many as the header has), each escaped as
// [resultcsv.Cell] escapes text, so that a cell a spreadsheet would run as
// a formula reads as text; then the result's and the job's state. A row
// that is not an address reads INVALID_FORMAT, invalid_syntax; a row
// whose job is still active has only its state. A row sharing its job
// with an earlier row of the address in another case gets a did_you_mean
// with its own local part.
func ListCSVRecord(width int, row jobs.ListRow) []string {
	out := make([]string, 0, width+resultcsv.Width+1)
	for _, cell := range row.Record {
		out = append(out, resultcsv.Cell(cell))
	}
	for len(out) < width {
		out = append(out, "")
	}
	j := row.Job
	switch {
	case j == nil:
		return append(resultcsv.AppendNotAddress(out), "")
	case j.State != jobs.StateCompleted:
		return append(resultcsv.Append(out, nil), string(j.State))
	}
	return append(resultcsv.Append(out, ownSuggestion(j.Result, row.Email)), string(j.State))
}

// BatchCSVHeader returns the header of a batch's CSV export: job_id,
// email, the result's columns ([resultcsv.Columns]), state.
func BatchCSVHeader() []string { return resultcsv.Header([]string{"job_id", "email"}, "state") }

// BatchCSVRecord returns a job's record of a batch's CSV export.
func BatchCSVRecord(j jobs.Job) []string {
	rec := make([]string, 0, 3+resultcsv.Width)
	rec = append(rec, j.ID, resultcsv.Cell(j.Email))
	res := j.Result
	if j.State != jobs.StateCompleted {
		res = nil
	}
	return append(resultcsv.Append(rec, res), string(j.State))
}

// exportTable serves a batch's export as a table, CSV (streamed) or
// .xlsx (written whole once read): a list's rows in upload order, the
// uploaded columns first, else the batch's jobs.
func (h *Handler) exportTable(w http.ResponseWriter, r *http.Request, c *call, batchID, format string, f ExportFilter) {
	ctx := r.Context()
	info, err := h.queue.List(ctx, c.key.AccountID, batchID)
	isList := err == nil
	if err != nil && !errors.Is(err, jobs.ErrNotFound) && !errors.Is(err, jobs.ErrNoLists) {
		h.batchError(w, c, "export", err)
		return
	}
	if f.NotAddresses && !isList {
		// Only a list has rows that are not addresses: a batch of
		// addresses is answered 404 if it is not the caller's, else
		// refused.
		if _, err := h.queue.Batch(ctx, c.key.AccountID, batchID); err != nil {
			h.batchError(w, c, "export", err)
			return
		}
		writeProblem(w, c, CodeInvalidBody, "rows=junk applies to a list (POST /api/v1/lists): this batch's addresses were given one by one.")
		return
	}
	write := func(start func() RecordWriter) error {
		if isList {
			return WriteList(ctx, h.queue, info, f, start)
		}
		return WriteBatch(ctx, h.queue, c.key.AccountID, batchID, f, start)
	}
	hd := w.Header()
	name := `attachment; filename="batch-` + batchID + exportSuffix(f) + "." + format + `"`
	if format == "xlsx" {
		leave, ok := h.workbooks.Enter(ctx, c.key.AccountID)
		if !ok {
			hd.Set("Retry-After", workbookRetryAfter)
			writeProblem(w, c, CodeRateLimited, "Other .xlsx workbooks are being made for this account or on this server; try again in a few seconds, or ask for format=csv, which is not limited.")
			return
		}
		defer leave()
		sw, err := NewSheetWriter("Results")
		if err != nil {
			h.backendError(w, c, "export", err)
			return
		}
		defer sw.Close()
		if err := write(func() RecordWriter { return sw }); err != nil {
			h.batchError(w, c, "export", err)
			return
		}
		hd.Set("X-Request-Id", c.id)
		hd.Set("Cache-Control", "no-store")
		hd.Set("Content-Type", XLSXContentType)
		hd.Set("Content-Disposition", name)
		w.WriteHeader(http.StatusOK)
		c.code = ""
		if _, err := h.workbooks.Send(w, sw); err != nil {
			c.errText = "xlsx export: " + err.Error()
		}
		return
	}
	var bw *bufio.Writer
	var cw *csv.Writer
	err = write(func() RecordWriter {
		hd.Set("X-Request-Id", c.id)
		hd.Set("Cache-Control", "no-store")
		hd.Set("Content-Type", "text/csv; charset=utf-8")
		hd.Set("Content-Disposition", name)
		w.WriteHeader(http.StatusOK)
		c.code = ""
		bw = bufio.NewWriterSize(w, 64<<10)
		cw = csv.NewWriter(bw)
		return cw
	})
	if cw == nil {
		h.batchError(w, c, "export", err)
		return
	}
	if err != nil {
		c.errText = "export: " + err.Error()
	}
	cw.Flush()
	bw.Flush()
}

// exportSuffix names a filtered export's file: its group, and whether
// deduplicated.
func exportSuffix(f ExportFilter) string {
	s := ""
	if f.NotAddresses {
		s = "-not-addresses"
	}
	if f.Group != "" {
		s = "-" + string(f.Group)
	}
	if f.Dedupe {
		s += "-unique"
	}
	return s
}

func containsStatus(ss []emailcheck.Status, s emailcheck.Status) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
