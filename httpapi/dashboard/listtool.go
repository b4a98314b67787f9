package dashboard

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/httpapi"
	"github.com/validmail/validmail/httpapi/internal/uploads"
	"github.com/validmail/validmail/jobs"
	"github.com/validmail/validmail/jobs/lists"
	"github.com/validmail/validmail/store"
)

// The list tool: a file of any size (within the deployment's list bounds)
// is read into a spool, previewed with its cost, and submitted as one
// list batch when the customer confirms. Its routes, relative to the
// prefix:
//
//	POST /bulk/list                  multipart: name, file
//	GET  /bulk/list/{token}          the preview and the cost
//	POST /bulk/list/{token}          confirm: submit the list
//	POST /bulk/list/{token}/column   field column (a number from 1)
//	POST /bulk/list/{token}/cancel
//	GET  /batches/{id}/list.csv      ?group=safe|risky|remove; none: all rows; ?dedupe=true: each address once; ?rows=junk: the rows without an address
//	GET  /batches/{id}/list.xlsx     the same, as an .xlsx workbook (one sheet, "Results")
//
// A list waits for its confirmation in the store the deployment shares
// (a [jobs.ListDraft]: its preview and its spooled rows in chunks), so
// that its preview, column change, confirmation and cancellation work on
// any instance, for ListWaitTTL at most (10 minutes by default), one per
// account (a new upload replaces the last) and MaxWaitingListsPerNetwork
// per client network (a network's new list drops its oldest): waiting
// lists never refuse another account's upload. The instance that reads
// an upload or a list keeps its rows in a temporary file only while it
// works on them, unlinked as soon as it is created (nothing is left
// behind by a shutdown or a crash).

// DefaultListWaitTTL is how long an uploaded list waits for its
// confirmation by default.
const DefaultListWaitTTL = 10 * time.Minute

// DefaultMaxWaitingListsPerNetwork is how many lists of one client
// network wait for their confirmation at once by default.
const DefaultMaxWaitingListsPerNetwork = 4

// previewRows is how many first rows the preview shows.
const previewRows = 10

// previewCellBytes bounds a cell as the preview shows it.
const previewCellBytes = 256

// draftChunkBytes is the size of a waiting list's chunks in the store.
const draftChunkBytes = 1 << 20

// maxListName bounds a list's name, in bytes.
const maxListName = 200

// pendingList is an uploaded list waiting for its confirmation: its
// draft's record, decoded.
type pendingList struct {
	token, account, name string
	network              string // the uploader's ratelimit.ClientKey
	text                 bool   // one address a line: no column to choose
	state                lists.SpoolState
	pv                   lists.Preview
	chunks               int
	expires              time.Time
}

// draftMeta is what a waiting list's draft keeps beside its rows.
type draftMeta struct {
	Name    string           `json:"name"`
	Text    bool             `json:"text"`
	State   lists.SpoolState `json:"state"`
	Preview lists.Preview    `json:"preview"`
}

// listTool bounds the uploads read at once, and says how long and how
// many lists wait for their confirmation.
type listTool struct {
	slots *uploads.Slots
	pace  uploads.Pace
	ttl   time.Duration
	// perNetwork bounds one client network's waiting lists.
	perNetwork int
	// respooling, if set, runs when a column change starts reading a
	// pending list again (tests hold it there).
	respooling func()
	// sizes are the groups' sizes of completed lists.
	sizes groupSizes
}

// listToolConfig is what the list tool takes of the dashboard's Config.
type listToolConfig struct {
	slots, perNetwork int
	healthy           int64
	grace             time.Duration
	pace              uploads.Pace
	ttl               time.Duration
	waitingPerNetwork int
	now               func() time.Time
}

// newListTool bounds the lists read at once, and those waiting.
func newListTool(c listToolConfig) *listTool {
	if c.slots <= 0 {
		c.slots = httpapi.DefaultMaxListUploads
	}
	if c.perNetwork == 0 {
		c.perNetwork = httpapi.DefaultMaxListUploadsPerNetwork
	}
	if c.healthy <= 0 {
		c.healthy = httpapi.DefaultListHealthyRate
	}
	c.pace = c.pace.OrDefault()
	if c.grace <= 0 {
		c.grace = c.pace.Window
	}
	if c.ttl <= 0 {
		c.ttl = DefaultListWaitTTL
	}
	if c.waitingPerNetwork <= 0 {
		c.waitingPerNetwork = DefaultMaxWaitingListsPerNetwork
	}
	if c.now == nil {
		c.now = time.Now
	}
	return &listTool{
		slots: uploads.NewSlots(&uploads.Config{Total: c.slots, PerAccount: httpapi.MaxListUploadsPerAccount,
			PerNetwork: c.perNetwork, HealthyRate: c.healthy, Grace: c.grace, Now: c.now}),
		pace: c.pace, ttl: c.ttl, perNetwork: c.waitingPerNetwork}
}

// shortCell cuts a cell to what the preview shows.
func shortCell(s string) string {
	if len(s) <= previewCellBytes {
		return s
	}
	s = s[:previewCellBytes]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s + "…"
}

// shortPreview returns pv with every cell cut to what the preview shows.
func shortPreview(pv lists.Preview) lists.Preview {
	pv.Header = slices.Clone(pv.Header)
	for i, h := range pv.Header {
		pv.Header[i] = shortCell(h)
	}
	first := make([][]string, len(pv.First))
	for i, rec := range pv.First {
		first[i] = make([]string, len(rec))
		for j, c := range rec {
			first[i][j] = shortCell(c)
		}
	}
	pv.First = first
	return pv
}

// drafts returns the store's waiting lists.
func (d *Dashboard) drafts() (*jobs.ListDrafts, error) { return d.cfg.Queue.ListDrafts() }

// chunkWriter writes a waiting list's rows to the store in chunks.
type chunkWriter struct {
	ctx     context.Context
	dd      *jobs.ListDrafts
	id      string
	expires time.Time
	buf     []byte
	n       int
}

func (cw *chunkWriter) Write(b []byte) (int, error) {
	written := 0
	for len(b) > 0 {
		k := min(len(b), draftChunkBytes-len(cw.buf))
		cw.buf = append(cw.buf, b[:k]...)
		b, written = b[k:], written+k
		if len(cw.buf) == draftChunkBytes {
			if err := cw.flush(); err != nil {
				return written, err
			}
		}
	}
	return written, nil
}

func (cw *chunkWriter) flush() error {
	if len(cw.buf) == 0 {
		return nil
	}
	if err := cw.dd.PutListDraftChunk(cw.ctx, cw.id, cw.n, cw.buf, cw.expires); err != nil {
		return err
	}
	cw.n++
	cw.buf = cw.buf[:0]
	return nil
}

// keepList stores p, whose rows sp holds, to wait for its confirmation:
// its rows first, then its record, which replaces the account's waiting
// list and may drop the oldest of its network's.
func (d *Dashboard) keepList(ctx context.Context, sp *lists.Spool, p *pendingList) error {
	dd, err := d.drafts()
	if err != nil {
		return err
	}
	p.state, p.expires = sp.State(), time.Now().Add(d.lists.ttl)
	meta, err := json.Marshal(draftMeta{Name: p.name, Text: p.text, State: p.state, Preview: shortPreview(p.pv)})
	if err != nil {
		return err
	}
	cw := &chunkWriter{ctx: ctx, dd: dd, id: p.token, expires: p.expires, buf: make([]byte, 0, draftChunkBytes)}
	if _, err = sp.WriteTo(cw); err == nil {
		err = cw.flush()
	}
	if err == nil {
		p.chunks = cw.n
		_, err = dd.PutListDraft(ctx, jobs.PutListDraftParams{PerNetwork: d.lists.perNetwork, Draft: jobs.ListDraft{
			ID: p.token, AccountID: p.account, Network: p.network, Meta: meta, Chunks: p.chunks, ExpiresAt: p.expires}})
	}
	if err != nil {
		dd.DeleteListDraft(context.WithoutCancel(ctx), p.token)
	}
	return err
}

// pendingOf decodes a draft.
func pendingOf(dr jobs.ListDraft) (*pendingList, error) {
	var m draftMeta
	if err := json.Unmarshal(dr.Meta, &m); err != nil {
		return nil, fmt.Errorf("dashboard: a waiting list's record: %w", err)
	}
	return &pendingList{token: dr.ID, account: dr.AccountID, network: dr.Network, name: m.Name, text: m.Text,
		state: m.State, pv: m.Preview, chunks: dr.Chunks, expires: dr.ExpiresAt}, nil
}

// getList returns the account's waiting list of token, or nil.
func (d *Dashboard) getList(ctx context.Context, token, account string) (*pendingList, error) {
	dd, err := d.drafts()
	if err != nil {
		return nil, err
	}
	dr, err := dd.ListDraft(ctx, account, token)
	if errors.Is(err, jobs.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return pendingOf(dr)
}

// takeList removes the account's waiting list of token and returns it,
// or nil: a list is submitted once, whatever the clicks, on whichever
// instances. Its rows stay until dropList or their expiry.
func (d *Dashboard) takeList(ctx context.Context, token, account string) (*pendingList, error) {
	dd, err := d.drafts()
	if err != nil {
		return nil, err
	}
	dr, err := dd.TakeListDraft(ctx, account, token)
	if errors.Is(err, jobs.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	p, err := pendingOf(dr)
	if err != nil {
		dd.DeleteListDraft(ctx, token)
	}
	return p, err
}

// restoreList keeps p waiting again after it was taken and not
// submitted, unless the account uploaded another list meanwhile: then
// p's rows are removed.
func (d *Dashboard) restoreList(ctx context.Context, p *pendingList) {
	ctx = context.WithoutCancel(ctx)
	dd, err := d.drafts()
	if err != nil {
		return
	}
	meta, err := json.Marshal(draftMeta{Name: p.name, Text: p.text, State: p.state, Preview: p.pv})
	kept := false
	if err == nil {
		kept, err = dd.PutListDraft(ctx, jobs.PutListDraftParams{Restore: true, PerNetwork: d.lists.perNetwork, Draft: jobs.ListDraft{
			ID: p.token, AccountID: p.account, Network: p.network, Meta: meta, Chunks: p.chunks, ExpiresAt: p.expires}})
	}
	if err != nil {
		d.cfg.Logger.WarnContext(ctx, "dashboard: restore a waiting list", "err", err)
	}
	if !kept {
		dd.DeleteListDraft(ctx, p.token)
	}
}

// dropList removes a taken list's rows from the store.
func (d *Dashboard) dropList(ctx context.Context, p *pendingList) {
	if dd, err := d.drafts(); err == nil {
		if err := dd.DeleteListDraft(context.WithoutCancel(ctx), p.token); err != nil {
			d.cfg.Logger.WarnContext(ctx, "dashboard: drop a waiting list", "err", err)
		}
	}
}

// chunkReader reads a waiting list's rows from the store, chunk by chunk.
type chunkReader struct {
	ctx  context.Context
	dd   *jobs.ListDrafts
	p    *pendingList
	n    int
	left []byte
}

func (cr *chunkReader) Read(b []byte) (int, error) {
	for len(cr.left) == 0 {
		if cr.n >= cr.p.chunks {
			return 0, io.EOF
		}
		c, err := cr.dd.ListDraftChunk(cr.ctx, cr.p.token, cr.n)
		if err != nil {
			return 0, err
		}
		cr.left, cr.n = c, cr.n+1
	}
	k := copy(b, cr.left)
	cr.left = cr.left[k:]
	return k, nil
}

// openList reads a waiting list's rows from the store into a spool of
// this instance's; the caller closes it.
func (d *Dashboard) openList(ctx context.Context, p *pendingList) (*lists.Spool, error) {
	dd, err := d.drafts()
	if err != nil {
		return nil, err
	}
	opts := d.listOptions()
	return lists.Restore(ctx, &chunkReader{ctx: ctx, dd: dd, p: p}, p.state, &opts)
}

// listOptions returns the bounds of a list read by the console.
func (d *Dashboard) listOptions() lists.Options {
	if d.cfg.Lists != nil {
		return *d.cfg.Lists
	}
	return lists.Options{}
}

// listBounds describes the bounds of a list, for the bulk page.
func (d *Dashboard) listBounds() string {
	o := d.listOptions()
	rows, size := o.MaxRows, o.MaxBytes
	if rows <= 0 {
		rows = lists.DefaultMaxRows
	}
	if size <= 0 {
		size = lists.DefaultMaxBytes
	}
	return thousands(int64(rows)) + " rows or " + strconv.FormatInt(size>>20, 10) + " MB"
}

// thousands writes n with commas between groups of three digits.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	if n < 0 {
		return "-" + thousands(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// refuseUpload renders the bulk page with an error about the upload.
func (d *Dashboard) refuseUpload(w http.ResponseWriter, r *http.Request, a store.Account, status int, msg string) {
	data, err := d.bulkData(r, a)
	if err != nil {
		d.backendError(w, r, "bulk", err)
		return
	}
	d.render(w, r, status, "bulk", page{Title: "Bulk validation", Nav: "bulk", Email: a.Email, Error: msg, Field: "list-file", Data: data})
}

// uploadList reads an uploaded file into a spool, keeps it for the
// customer's confirmation and shows its preview. The body is streamed:
// only one row at a time is in memory, and the upload outlives the
// server's read timeout while it keeps sending.
func (d *Dashboard) uploadList(w http.ResponseWriter, r *http.Request, a store.Account) {
	network := d.clientKey(r)
	slot, why := d.lists.slots.Take(a.ID, network)
	if why != uploads.Granted {
		// The body is not read: the server must not wait for the rest
		// of it (a trickle) before answering.
		w.Header().Set("Connection", "close")
		retryAfter(w, 5*time.Second)
		d.refuseUpload(w, r, a, http.StatusTooManyRequests, slotRefusal(why, "Upload this one"))
		return
	}
	defer slot.Release()
	opts := d.listOptions()
	maxBytes := opts.MaxBytes
	if maxBytes <= 0 {
		maxBytes = lists.DefaultMaxBytes
	}
	// The upload lives past the server's read timeout while it keeps
	// sending at the pace, and ends when its slot goes to a faster one.
	paced := uploads.NewReader(w, r.Body, d.lists.pace, slot)
	defer paced.Done()
	r.Body = http.MaxBytesReader(w, io.NopCloser(paced), maxBytes+64<<10)
	mr, err := r.MultipartReader()
	if err != nil {
		d.refuseUpload(w, r, a, http.StatusBadRequest, "The form could not be read.")
		return
	}
	name := ""
	for range 8 {
		part, err := mr.NextPart()
		if err != nil {
			d.uploadError(w, r, a, paced, err)
			return
		}
		switch part.FormName() {
		case "name":
			b, err := io.ReadAll(io.LimitReader(part, maxListName+1))
			if err != nil {
				d.uploadError(w, r, a, paced, err)
				return
			}
			name = strings.TrimSpace(string(b))
			if len(name) > maxListName || !isText(name) || strings.ContainsFunc(name, func(c rune) bool { return c < 0x20 || c == 0x7f }) {
				d.refuseUpload(w, r, a, http.StatusUnprocessableEntity, fmt.Sprintf("A list's name has at most %d characters, without control characters.", maxListName))
				return
			}
			continue
		case "file":
		default:
			io.Copy(io.Discard, io.LimitReader(part, 64<<10))
			continue
		}
		fname := path.Base(strings.ReplaceAll(part.FileName(), `\`, "/"))
		if fname == "." || fname == "/" || fname == "" {
			d.refuseUpload(w, r, a, http.StatusUnprocessableEntity, "Choose a file: a .csv or .xlsx file with a column of addresses, or a .txt file with one address per line.")
			return
		}
		if name == "" && len(fname) <= maxListName && isText(fname) {
			name = fname
		}
		lower := strings.ToLower(fname)
		opts.Text = strings.HasSuffix(lower, ".txt")
		read := lists.Read
		if strings.HasSuffix(lower, ".xlsx") {
			read = lists.ReadXLSX // its first sheet
		}
		sp, err := read(r.Context(), part, &opts)
		if err != nil {
			d.uploadError(w, r, a, paced, err)
			return
		}
		// From here the slot is the upload's until the end, unless it
		// was taken before the file was in.
		paced.Done()
		if paced.Err() != nil {
			sp.Close()
			d.uploadError(w, r, a, paced, paced.Err())
			return
		}
		defer sp.Close()
		pv, err := sp.Preview(r.Context(), previewRows)
		if err != nil {
			d.backendError(w, r, "list preview", err)
			return
		}
		p := &pendingList{token: newToken(), account: a.ID, network: network, name: name, text: opts.Text, pv: pv}
		if err := d.keepList(r.Context(), sp, p); err != nil {
			d.backendError(w, r, "list keep", err)
			return
		}
		d.redirect(w, r, "/bulk/list/"+p.token)
		return
	}
	d.refuseUpload(w, r, a, http.StatusUnprocessableEntity, "Choose a file: a .csv or .xlsx file with a column of addresses, or a .txt file with one address per line.")
}

// slotRefusal tells why an upload found no slot; then names what to do
// when one is free.
func slotRefusal(why uploads.Refusal, then string) string {
	switch why {
	case uploads.AccountBusy:
		return fmt.Sprintf("This account is uploading %d lists already. %s when one of them is done.", httpapi.MaxListUploadsPerAccount, then)
	case uploads.NetworkBusy:
		return fmt.Sprintf("Too many lists are being uploaded from your network. %s when one of them is done.", then)
	}
	return fmt.Sprintf("Too many lists are being uploaded right now. %s in a moment.", then)
}

// uploadError answers an upload that could not be read.
func (d *Dashboard) uploadError(w http.ResponseWriter, r *http.Request, a store.Account, paced *uploads.Reader, err error) {
	var mbe *http.MaxBytesError
	var pe *lists.ParseError
	if paced.Err() != nil {
		// The server cancelled the request's context when the read
		// failed: the page that says why is still made and sent.
		r = r.WithContext(context.WithoutCancel(r.Context()))
	}
	switch {
	case errors.Is(paced.Err(), uploads.ErrEvicted):
		w.Header().Set("Connection", "close")
		retryAfter(w, 5*time.Second)
		d.refuseUpload(w, r, a, http.StatusTooManyRequests, "The upload was too slow to keep its place while other lists waited: it was ended. Nothing was submitted; upload the file again.")
	case errors.Is(paced.Err(), uploads.ErrTooLong):
		w.Header().Set("Connection", "close")
		d.refuseUpload(w, r, a, http.StatusRequestTimeout, "The upload took longer than a list upload may. Nothing was submitted; upload the file again from a faster connection, or split it.")
	case paced.Err() != nil:
		w.Header().Set("Connection", "close")
		d.refuseUpload(w, r, a, http.StatusRequestTimeout, "The upload stalled: the file stopped arriving fast enough. Nothing was submitted; upload it again.")
	case errors.As(err, &mbe), errors.Is(err, lists.ErrTooLarge), errors.Is(err, multipart.ErrMessageTooLarge):
		w.Header().Set("Connection", "close")
		d.refuseUpload(w, r, a, http.StatusRequestEntityTooLarge, "The file is larger than a list may be ("+d.listBounds()+"). Split it and upload the parts one after another.")
	case errors.Is(err, lists.ErrNoColumn):
		d.refuseUpload(w, r, a, http.StatusUnprocessableEntity, "No column of the file holds addresses. Name the column “email”, or put the addresses in the first column.")
	case errors.Is(err, lists.ErrTooManyRows):
		d.refuseUpload(w, r, a, http.StatusUnprocessableEntity, "The file has more rows than a list may have ("+d.listBounds()+"). Split it and upload the parts one after another.")
	case errors.Is(err, lists.ErrNoRows):
		d.refuseUpload(w, r, a, http.StatusUnprocessableEntity, "The file has no rows.")
	case errors.Is(err, lists.ErrBadWorkbook):
		d.refuseUpload(w, r, a, http.StatusUnprocessableEntity, "The workbook cannot be read: save it from your spreadsheet as .xlsx (not encrypted), or as CSV, and upload it again.")
	case errors.Is(err, lists.ErrNUL):
		d.refuseUpload(w, r, a, http.StatusUnprocessableEntity, "The file is not text: it holds a NUL byte"+lineOf(pe, err)+". Save it from your spreadsheet as CSV and upload it again.")
	case errors.Is(err, lists.ErrBadQuote), errors.Is(err, lists.ErrLineTooLong), errors.Is(err, lists.ErrTooManyColumns):
		d.refuseUpload(w, r, a, http.StatusUnprocessableEntity, "The file cannot be read as CSV"+lineOf(pe, err)+": "+strings.TrimPrefix(errors.Unwrap(err).Error(), "lists: ")+".")
	default:
		d.refuseUpload(w, r, a, http.StatusBadRequest, "The upload could not be read. Nothing was submitted; upload the file again.")
	}
}

// lineOf names the line of a list's error, if it has one.
func lineOf(pe *lists.ParseError, err error) string {
	if errors.As(err, &pe) && pe.Line > 0 {
		return " (line " + strconv.Itoa(pe.Line) + ")"
	}
	return ""
}

// listCost is what confirming a list costs the account now.
type listCost struct {
	// Free is how many unique addresses the free allowance covers;
	// Credits the credits for the rest; Balance the account's credits;
	// Short how many credits are missing (0: enough).
	Free      int
	Credits   int64
	Balance   int64
	Short     int64
	Remaining int // of the free allowance
	Limit     int
	Window    string
}

// cost reads the account's free allowance and balance for a list of
// unique addresses.
func (d *Dashboard) cost(ctx context.Context, account string, unique int) (listCost, error) {
	quota := d.bulkQuota(ctx, account)
	dec, err := d.limits.quotas.Take(ctx, bulkKey(account), 0, quota)
	if err != nil {
		return listCost{}, err
	}
	bal, err := d.cfg.Ledger.Balance(ctx, account)
	if err != nil {
		return listCost{}, err
	}
	c := listCost{Free: min(dec.Remaining, unique), Balance: bal, Remaining: dec.Remaining, Limit: quota.Limit, Window: humanWait(d.cfg.BulkWindow)}
	c.Credits = int64(unique - c.Free)
	c.Short = max(c.Credits-bal, 0)
	return c, nil
}

// previewCell is a cell of the preview's table.
type previewCell struct {
	Text    string
	Address bool // in the address column
}

// listPreviewData is the preview page's data.
type listPreviewData struct {
	Token, Name string
	Text        bool
	Header      []previewCell
	Columns     []string // the header's names, to choose another column
	Column      int      // from 1
	HasHeader   bool
	First       [][]previewCell
	Rows        int
	Unique      int
	Duplicates  int
	Invalid     int
	Encoding    string // the file's encoding, as package charset names it
	Cost        listCost
}

func (d *Dashboard) previewData(ctx context.Context, p *pendingList) (listPreviewData, error) {
	pv := p.pv
	data := listPreviewData{Token: p.token, Name: p.name, Text: p.text, Column: pv.Column + 1, HasHeader: pv.HasHeader,
		Rows: pv.Rows, Unique: pv.Unique, Duplicates: pv.Duplicates, Invalid: pv.InvalidRows, Columns: pv.Header,
		Encoding: p.state.Encoding}
	for i, h := range pv.Header {
		data.Header = append(data.Header, previewCell{Text: h, Address: i == pv.Column})
	}
	for _, rec := range pv.First {
		row := make([]previewCell, len(pv.Header))
		for i := range row {
			if i < len(rec) {
				row[i].Text = rec[i]
			}
			row[i].Address = i == pv.Column
		}
		data.First = append(data.First, row)
	}
	var err error
	data.Cost, err = d.cost(ctx, p.account, pv.Unique)
	return data, err
}

// renderPreview renders a pending list's preview with status and msg.
func (d *Dashboard) renderPreview(w http.ResponseWriter, r *http.Request, a store.Account, p *pendingList, status int, msg string) {
	data, err := d.previewData(r.Context(), p)
	if err != nil {
		d.backendError(w, r, "list preview", err)
		return
	}
	if msg == "" && data.Cost.Short > 0 {
		status = http.StatusPaymentRequired
		msg = fmt.Sprintf("This list needs %s credits beyond the free allowance and the account has %s: %s more are needed. Nothing was submitted.",
			thousands(data.Cost.Credits), thousands(data.Cost.Balance), thousands(data.Cost.Short))
	}
	title := "Preview of " + p.name
	if p.name == "" {
		title = "Preview of the list"
	}
	w.Header().Set("Cache-Control", "no-store")
	d.render(w, r, status, "list_preview", page{Title: title, Nav: "bulk", Email: a.Email, Error: msg, Data: data})
}

// gone answers a token whose list is no longer waiting.
func (d *Dashboard) gone(w http.ResponseWriter, r *http.Request) {
	d.fail(w, r, http.StatusNotFound, "This upload is no longer waiting: it was submitted, cancelled, replaced by a newer upload, or kept longer than it may wait, or dropped for a newer list from your network. Upload the file again on the Bulk page.")
}

func (d *Dashboard) listPreviewPage(w http.ResponseWriter, r *http.Request, a store.Account) {
	p, err := d.getList(r.Context(), r.PathValue("token"), a.ID)
	if err != nil {
		d.backendError(w, r, "list preview", err)
		return
	}
	if p == nil {
		d.gone(w, r)
		return
	}
	d.renderPreview(w, r, a, p, http.StatusOK, "")
}

// confirmList submits a pending list: the free allowance covers its first
// unique addresses, credits the rest, and the list becomes a batch.
func (d *Dashboard) confirmList(w http.ResponseWriter, r *http.Request, a store.Account) {
	ctx := r.Context()
	p, err := d.takeList(ctx, r.PathValue("token"), a.ID)
	if err != nil {
		d.backendError(w, r, "list confirm", err)
		return
	}
	if p == nil {
		d.gone(w, r)
		return
	}
	// The preview showed the credits this list would cost; the list is
	// not submitted for more (the allowance may have been spent
	// elsewhere since): the preview is shown again with the new cost.
	previewed, err := strconv.ParseInt(r.PostFormValue("credits"), 10, 64)
	if err != nil || previewed < 0 {
		previewed = 0
	}
	costlier := func(credits int64) {
		d.restoreList(ctx, p)
		d.renderPreview(w, r, a, p, http.StatusConflict, fmt.Sprintf(
			"The cost of this list changed since its preview: it now needs %s credits instead of %s (the free allowance was used meanwhile). Nothing was submitted; confirm again to validate it at this cost.",
			thousands(credits), thousands(previewed)))
	}
	c, err := d.cost(ctx, a.ID, p.pv.Unique)
	if err != nil {
		d.restoreList(ctx, p)
		d.backendError(w, r, "list cost", err)
		return
	}
	if c.Credits > previewed {
		costlier(c.Credits)
		return
	}
	// The allowance is taken first, all or nothing; a window that moved
	// since the cost was read gives nothing, and the list then costs
	// more than its preview said.
	free, window := 0, int64(0)
	if c.Free > 0 {
		dec, err := d.limits.quotas.Take(ctx, bulkKey(a.ID), c.Free, d.bulkQuota(ctx, a.ID))
		if err != nil {
			d.restoreList(ctx, p)
			d.backendError(w, r, "list allowance", err)
			return
		}
		if dec.Allowed {
			free, window = c.Free, dec.Window
		}
	}
	if credits := int64(p.pv.Unique - free); credits > previewed {
		if free > 0 {
			d.refundBulk(ctx, a.ID, free, window)
		}
		costlier(credits)
		return
	}
	sp, err := d.openList(ctx, p)
	if err != nil {
		if free > 0 {
			d.refundBulk(ctx, a.ID, free, window)
		}
		d.restoreList(ctx, p)
		d.backendError(w, r, "list read", err)
		return
	}
	info, err := lists.Submit(ctx, d.cfg.Queue, sp, lists.SubmitParams{AccountID: a.ID, Name: p.name, Source: jobs.SourceDashboard, FreeAddresses: free})
	sp.Close()
	if err != nil {
		if free > 0 {
			d.refundBulk(ctx, a.ID, free, window)
		}
		switch {
		case errors.Is(err, credits.ErrInsufficient):
			d.restoreList(ctx, p)
			d.renderPreview(w, r, a, p, http.StatusPaymentRequired, "The account does not have the credits this list needs (its balance changed since the preview). Nothing was submitted.")
		case errors.Is(err, jobs.ErrEmptyBatch):
			d.dropList(ctx, p)
			d.refuseUpload(w, r, a, http.StatusUnprocessableEntity, "No row of the list holds an address. Nothing was submitted.")
		default:
			d.restoreList(ctx, p)
			d.backendError(w, r, "list submit", err)
		}
		return
	}
	d.dropList(ctx, p)
	if used := min(free, info.Addresses); free > used {
		d.refundBulk(ctx, a.ID, free-used, window)
	}
	msg := fmt.Sprintf("The list is submitted: %s unique addresses", thousands(int64(info.Addresses)))
	if info.Charged > 0 {
		msg += fmt.Sprintf(", %s credits charged", thousands(info.Charged))
	}
	d.flash(ctx, msg+".")
	d.redirect(w, r, "/batches/"+info.BatchID)
}

// listColumn reads a pending list again with another address column.
// The new reading takes an upload slot, as an upload does, and the
// pending list leaves the table while it is read: another change, a
// confirmation or a cancellation of it meanwhile finds nothing to do.
func (d *Dashboard) listColumn(w http.ResponseWriter, r *http.Request, a store.Account) {
	ctx := r.Context()
	token := r.PathValue("token")
	p, err := d.getList(ctx, token, a.ID)
	if err != nil {
		d.backendError(w, r, "list column", err)
		return
	}
	if p == nil {
		d.gone(w, r)
		return
	}
	col, err := strconv.Atoi(r.PostFormValue("column"))
	if p.text || err != nil || col < 1 || col > len(p.pv.Header) {
		d.renderPreview(w, r, a, p, http.StatusUnprocessableEntity, "Choose one of the file's columns.")
		return
	}
	if col == p.pv.Column+1 {
		d.redirect(w, r, "/bulk/list/"+p.token)
		return
	}
	slot, why := d.lists.slots.Take(a.ID, d.clientKey(r))
	if why != uploads.Granted {
		retryAfter(w, 5*time.Second)
		d.renderPreview(w, r, a, p, http.StatusTooManyRequests, slotRefusal(why, "Try the column again"))
		return
	}
	// Reading again is not an upload: nothing can end it early.
	slot.Pin()
	defer slot.Release()
	if p, err = d.takeList(ctx, token, a.ID); err != nil || p == nil {
		if err != nil {
			d.backendError(w, r, "list column", err)
			return
		}
		d.gone(w, r)
		return
	}
	if d.lists.respooling != nil {
		d.lists.respooling()
	}
	old, err := d.openList(ctx, p)
	if err != nil {
		d.restoreList(ctx, p)
		d.backendError(w, r, "list read", err)
		return
	}
	sp, err := d.respool(ctx, old, col)
	old.Close()
	if err != nil {
		d.restoreList(ctx, p)
		msg := "That column cannot hold the list's addresses."
		if !errors.Is(err, lists.ErrNoColumn) {
			d.cfg.Logger.WarnContext(ctx, "dashboard: list column", "err", err)
			msg = "The list could not be read with that column."
		}
		d.renderPreview(w, r, a, p, http.StatusUnprocessableEntity, msg)
		return
	}
	pv, err := sp.Preview(ctx, previewRows)
	if err != nil {
		sp.Close()
		d.restoreList(ctx, p)
		d.backendError(w, r, "list preview", err)
		return
	}
	np := &pendingList{token: newToken(), account: a.ID, network: p.network, name: p.name, pv: pv}
	err = d.keepList(ctx, sp, np)
	sp.Close()
	if err != nil {
		d.restoreList(ctx, p)
		d.backendError(w, r, "list keep", err)
		return
	}
	d.dropList(ctx, p)
	d.redirect(w, r, "/bulk/list/"+np.token)
}

// respool reads sp's rows into a new spool whose address column is col
// (from 1).
func (d *Dashboard) respool(ctx context.Context, sp *lists.Spool, col int) (*lists.Spool, error) {
	pr, pw := io.Pipe()
	written := make(chan struct{})
	go func() {
		defer close(written)
		bw := bufio.NewWriter(pw)
		cw := csv.NewWriter(bw)
		if sp.HasHeader {
			cw.Write(sp.Header)
		}
		err := sp.Each(ctx, func(row jobs.ListRow) error { return cw.Write(row.Record) })
		cw.Flush()
		if err == nil {
			err = cw.Error()
		}
		if err == nil {
			err = bw.Flush()
		}
		pw.CloseWithError(err)
	}()
	opts := d.listOptions()
	opts.Column = strconv.Itoa(col)
	nsp, err := lists.Read(ctx, pr, &opts)
	pr.CloseWithError(io.ErrClosedPipe) // the writer stops if Read did
	// The old spool may be closed once this returns: its reader must be
	// done with it.
	<-written
	return nsp, err
}

// cancelList removes a pending list.
func (d *Dashboard) cancelList(w http.ResponseWriter, r *http.Request, a store.Account) {
	p, err := d.takeList(r.Context(), r.PathValue("token"), a.ID)
	if err != nil {
		d.backendError(w, r, "list cancel", err)
		return
	}
	if p != nil {
		d.dropList(r.Context(), p)
		d.flash(r.Context(), "The upload is cancelled; nothing was submitted.")
	}
	d.redirect(w, r, "/bulk")
}

// listGroup is a download of a list's rows by what to do with them.
type listGroup struct {
	Group, Label, Help, URL string
	// UniqueURL downloads the group with each address once.
	UniqueURL string
	// XLSXURL downloads the group as an .xlsx workbook.
	XLSXURL string
	// Rows is the group's size in rows, when Sized.
	Rows  int
	Sized bool
}

// listGroups returns the downloads of a list batch's rows; nil for a
// batch that is not a list.
func (d *Dashboard) listGroups(ctx context.Context, account string, b jobs.Batch) ([]listGroup, error) {
	if _, err := d.cfg.Queue.List(ctx, account, b.ID); err != nil {
		if errors.Is(err, jobs.ErrNotFound) || errors.Is(err, jobs.ErrNoLists) {
			return nil, nil
		}
		return nil, err
	}
	u := d.path("/batches/" + b.ID + "/list.csv")
	x := d.path("/batches/" + b.ID + "/list.xlsx")
	return []listGroup{
		{Group: string(httpapi.GroupSafe), Label: "Safe to send", Help: "Deliverable and likely addresses that are not role accounts.", URL: u + "?group=safe", UniqueURL: u + "?group=safe&dedupe=true", XLSXURL: x + "?group=safe"},
		{Group: string(httpapi.GroupRisky), Label: "Risky", Help: "Catch-all domains, unknown answers and role accounts (info@, sales@).", URL: u + "?group=risky", UniqueURL: u + "?group=risky&dedupe=true", XLSXURL: x + "?group=risky"},
		{Group: string(httpapi.GroupRemove), Label: "Remove", Help: "Undeliverable, disposable, invalid and rows without an address.", URL: u + "?group=remove", UniqueURL: u + "?group=remove&dedupe=true", XLSXURL: x + "?group=remove"},
		{Label: "All rows", Help: "Every row of the file, in its order, with its verdict.", URL: u, UniqueURL: u + "?dedupe=true", XLSXURL: x},
	}, nil
}

// listCSV streams a list batch's rows as CSV, the uploaded columns first,
// as the API's export of the list does; ?group= keeps one group,
// ?dedupe=true each address's first row, with its count of duplicates,
// ?rows=junk the rows without an address alone.
func (d *Dashboard) listCSV(w http.ResponseWriter, r *http.Request, a store.Account) {
	d.listExport(w, r, a, "csv")
}

// listXLSX is [Dashboard.listCSV] as an .xlsx workbook of one sheet.
func (d *Dashboard) listXLSX(w http.ResponseWriter, r *http.Request, a store.Account) {
	d.listExport(w, r, a, "xlsx")
}

// listExport writes a list batch's rows in format, csv or xlsx.
func (d *Dashboard) listExport(w http.ResponseWriter, r *http.Request, a store.Account, format string) {
	ctx := r.Context()
	group := httpapi.Group(r.URL.Query().Get("group"))
	switch group {
	case "", httpapi.GroupSafe, httpapi.GroupRisky, httpapi.GroupRemove:
	default:
		d.fail(w, r, http.StatusBadRequest, "A download's group is safe, risky or remove.")
		return
	}
	b, ok := d.batch(w, r, a)
	if !ok {
		return
	}
	info, err := d.cfg.Queue.List(ctx, a.ID, b.ID)
	if errors.Is(err, jobs.ErrNotFound) || errors.Is(err, jobs.ErrNoLists) {
		d.fail(w, r, http.StatusNotFound, "This batch is not a list: download its results as CSV from its page.")
		return
	}
	if err != nil {
		d.backendError(w, r, "list export", err)
		return
	}
	dedupe := r.URL.Query().Get("dedupe") == "true"
	junk := r.URL.Query().Get("rows") == "junk"
	name := string(group)
	if junk {
		name = "not-addresses"
	}
	if dedupe {
		name = strings.TrimPrefix(name+"-unique", "-")
	}
	filter := httpapi.ExportFilter{Group: group, Dedupe: dedupe, NotAddresses: junk}
	file := downloadName(batchRow{Batch: b}, name)
	if format == "xlsx" {
		d.writeXLSX(w, r, a, strings.TrimSuffix(file, ".csv")+".xlsx", func(start func() httpapi.RecordWriter) error {
			return httpapi.WriteList(ctx, d.cfg.Queue, info, filter, start)
		})
		return
	}
	var bw *bufio.Writer
	var cw *csv.Writer
	err = httpapi.WriteList(ctx, d.cfg.Queue, info, filter, func() httpapi.RecordWriter {
		h := w.Header()
		h.Set("Content-Type", "text/csv; charset=utf-8")
		h.Set("Content-Disposition", `attachment; filename="`+file+`"`)
		h.Set("Cache-Control", "no-store")
		bw = bufio.NewWriterSize(w, 64<<10)
		cw = csv.NewWriter(bw)
		return cw
	})
	if cw == nil {
		d.backendError(w, r, "list export", err)
		return
	}
	if err != nil {
		d.cfg.Logger.ErrorContext(ctx, "dashboard: list export", "err", err)
		// The rows sent so far must not pass for the whole file: abort
		// the response, so the download visibly fails.
		cw.Flush()
		bw.Flush()
		panic(http.ErrAbortHandler)
	}
	cw.Flush()
	bw.Flush()
}

// downloadName is a download's file name: the batch's name (its letters,
// digits, dots, dashes and underscores) or number, and the group.
func downloadName(b batchRow, group string) string {
	base := strings.TrimSuffix(strings.TrimSuffix(b.Name, ".csv"), ".txt")
	base = strings.Map(func(c rune) rune {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '-', c == '_':
			return c
		}
		return '-'
	}, base)
	base = strings.Trim(base, "-.")
	if base == "" {
		base = "batch-" + strconv.FormatInt(b.Number, 10)
		if b.Number == 0 {
			base = "batch-" + b.ID
		}
	}
	if group != "" {
		base += "-" + group
	}
	return base + ".csv"
}

// Label names a batch on the console's pages: its name, else its number
// in the account, else its date.
func (b batchRow) Label() string {
	switch {
	case b.Name != "":
		return b.Name
	case b.Number > 0:
		return "Batch " + strconv.FormatInt(b.Number, 10)
	}
	return "Batch of " + formatTime(b.CreatedAt)
}

// Title is a batch page's title: its label, with its number when the
// label is its name.
func (b batchRow) Title() string {
	if b.Name != "" && b.Number > 0 {
		return b.Name + " (batch " + strconv.FormatInt(b.Number, 10) + ")"
	}
	return b.Label()
}
