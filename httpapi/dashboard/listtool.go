package dashboard

import (
	"bufio"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

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
//	GET  /batches/{id}/list.csv      ?group=safe|risky|remove; none: all rows
//
// A spool waits for its confirmation in this process for pendingTTL at
// most, one per account (a new upload replaces the last); its temporary
// file, unlinked as soon as it is created (nothing is left behind by a
// shutdown or a crash), is freed on confirmation, cancellation,
// replacement or expiry.

// pendingTTL is how long an uploaded list waits for its confirmation.
const pendingTTL = 30 * time.Minute

// previewRows is how many first rows the preview shows.
const previewRows = 10

// maxListName bounds a list's name, in bytes.
const maxListName = 200

// pendingList is an uploaded list waiting for its confirmation.
type pendingList struct {
	token, account, name string
	text                 bool // one address a line: no column to choose
	sp                   *lists.Spool
	pv                   lists.Preview
	timer                *time.Timer
}

// listTool keeps the lists waiting for confirmation and bounds the
// uploads read at once.
type listTool struct {
	mu        sync.Mutex
	byToken   map[string]*pendingList
	byAccount map[string]string
	slots     *uploads.Slots
	// maxPending bounds the lists waiting for confirmation at once,
	// every account's together, and so the disk their spools take.
	maxPending int
	// respooling, if set, runs when a column change starts reading a
	// pending list again (tests hold it there).
	respooling func()
}

// newListTool bounds the lists read at once to slots (0: the default).
func newListTool(slots int) *listTool {
	if slots <= 0 {
		slots = httpapi.DefaultMaxListUploads
	}
	return &listTool{byToken: map[string]*pendingList{}, byAccount: map[string]string{},
		slots: uploads.NewSlots(slots, httpapi.MaxListUploadsPerAccount), maxPending: 2 * slots}
}

// waitingFull reports whether a new upload of account would find no room
// among the lists waiting for confirmation: the instance keeps maxPending
// at most, and an account's new list replaces its own waiting one.
func (lt *listTool) waitingFull(account string) bool {
	lt.mu.Lock()
	defer lt.mu.Unlock()
	_, replaces := lt.byAccount[account]
	return !replaces && len(lt.byToken) >= lt.maxPending
}

// put keeps p until its confirmation or pendingTTL, replacing (and
// removing) the account's last pending list.
func (lt *listTool) put(p *pendingList) {
	lt.mu.Lock()
	old := lt.byToken[lt.byAccount[p.account]]
	if old != nil {
		lt.dropLocked(old)
	}
	lt.byToken[p.token] = p
	lt.byAccount[p.account] = p.token
	p.timer = time.AfterFunc(pendingTTL, func() { lt.expire(p) })
	lt.mu.Unlock()
	if old != nil {
		old.sp.Close()
	}
}

// restore keeps p again after it was taken and not submitted, unless
// the account uploaded another list meanwhile: then p's file is removed.
func (lt *listTool) restore(p *pendingList) {
	lt.mu.Lock()
	kept := lt.byToken[lt.byAccount[p.account]] == nil
	if kept {
		lt.byToken[p.token] = p
		lt.byAccount[p.account] = p.token
		p.timer = time.AfterFunc(pendingTTL, func() { lt.expire(p) })
	}
	lt.mu.Unlock()
	if !kept {
		p.sp.Close()
	}
}

// pendingOf reports whether the account has a list waiting here.
func (lt *listTool) pendingOf(account string) bool {
	lt.mu.Lock()
	defer lt.mu.Unlock()
	return lt.byToken[lt.byAccount[account]] != nil
}

// dropAccount forgets the account's waiting list, if any, and removes
// its file.
func (lt *listTool) dropAccount(account string) {
	lt.mu.Lock()
	p := lt.byToken[lt.byAccount[account]]
	if p != nil {
		lt.dropLocked(p)
	}
	lt.mu.Unlock()
	if p != nil {
		p.sp.Close()
	}
}

// get returns the account's pending list of token, or nil.
func (lt *listTool) get(token, account string) *pendingList {
	lt.mu.Lock()
	defer lt.mu.Unlock()
	if p := lt.byToken[token]; p != nil && p.account == account {
		return p
	}
	return nil
}

// take removes the account's pending list of token and returns it, or
// nil: a list is submitted once, whatever the clicks.
func (lt *listTool) take(token, account string) *pendingList {
	lt.mu.Lock()
	defer lt.mu.Unlock()
	p := lt.byToken[token]
	if p == nil || p.account != account {
		return nil
	}
	lt.dropLocked(p)
	return p
}

// expire forgets p and removes its file, unless it was taken meanwhile
// (a confirmation may be reading it).
func (lt *listTool) expire(p *pendingList) {
	lt.mu.Lock()
	kept := lt.byToken[p.token] == p
	if kept {
		lt.dropLocked(p)
	}
	lt.mu.Unlock()
	if kept {
		p.sp.Close()
	}
}

func (lt *listTool) dropLocked(p *pendingList) {
	if lt.byToken[p.token] == p {
		delete(lt.byToken, p.token)
	}
	if lt.byAccount[p.account] == p.token {
		delete(lt.byAccount, p.account)
	}
	if p.timer != nil {
		p.timer.Stop()
	}
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
	release, why := d.lists.slots.Take(a.ID)
	switch why {
	case uploads.AccountBusy:
		retryAfter(w, 5*time.Second)
		d.refuseUpload(w, r, a, http.StatusTooManyRequests, fmt.Sprintf("This account is uploading %d lists already. Upload this one when one of them is done.", httpapi.MaxListUploadsPerAccount))
		return
	case uploads.InstanceBusy:
		retryAfter(w, 5*time.Second)
		d.refuseUpload(w, r, a, http.StatusTooManyRequests, "Too many lists are being uploaded right now. Try again in a moment.")
		return
	}
	defer release()
	if d.lists.waitingFull(a.ID) {
		retryAfter(w, time.Minute)
		d.refuseUpload(w, r, a, http.StatusTooManyRequests, "Too many lists are waiting for their confirmation on this server. Try again in a few minutes.")
		return
	}
	opts := d.listOptions()
	maxBytes := opts.MaxBytes
	if maxBytes <= 0 {
		maxBytes = lists.DefaultMaxBytes
	}
	paced := uploads.NewReader(w, r.Body, uploads.Pace{})
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
			d.refuseUpload(w, r, a, http.StatusUnprocessableEntity, "Choose a file: a .csv file with a column of addresses, or a .txt file with one address per line.")
			return
		}
		if name == "" && len(fname) <= maxListName && isText(fname) {
			name = fname
		}
		lower := strings.ToLower(fname)
		opts.Text = strings.HasSuffix(lower, ".txt")
		sp, err := lists.Read(r.Context(), part, &opts)
		if err != nil {
			d.uploadError(w, r, a, paced, err)
			return
		}
		pv, err := sp.Preview(r.Context(), previewRows)
		if err != nil {
			sp.Close()
			d.backendError(w, r, "list preview", err)
			return
		}
		p := &pendingList{token: newToken(), account: a.ID, name: name, text: opts.Text, sp: sp, pv: pv}
		d.lists.put(p)
		d.redirect(w, r, "/bulk/list/"+p.token)
		return
	}
	d.refuseUpload(w, r, a, http.StatusUnprocessableEntity, "Choose a file: a .csv file with a column of addresses, or a .txt file with one address per line.")
}

// uploadError answers an upload that could not be read.
func (d *Dashboard) uploadError(w http.ResponseWriter, r *http.Request, a store.Account, paced *uploads.Reader, err error) {
	var mbe *http.MaxBytesError
	var pe *lists.ParseError
	switch {
	case paced.Stalled():
		w.Header().Set("Connection", "close")
		d.refuseUpload(w, r, a, http.StatusRequestTimeout, "The upload stalled: the file stopped arriving. Nothing was submitted; upload it again.")
	case errors.As(err, &mbe), errors.Is(err, lists.ErrTooLarge), errors.Is(err, multipart.ErrMessageTooLarge):
		w.Header().Set("Connection", "close")
		d.refuseUpload(w, r, a, http.StatusRequestEntityTooLarge, "The file is larger than a list may be ("+d.listBounds()+"). Split it and upload the parts one after another.")
	case errors.Is(err, lists.ErrNoColumn):
		d.refuseUpload(w, r, a, http.StatusUnprocessableEntity, "No column of the file holds addresses. Name the column “email”, or put the addresses in the first column.")
	case errors.Is(err, lists.ErrTooManyRows):
		d.refuseUpload(w, r, a, http.StatusUnprocessableEntity, "The file has more rows than a list may have ("+d.listBounds()+"). Split it and upload the parts one after another.")
	case errors.Is(err, lists.ErrNoRows):
		d.refuseUpload(w, r, a, http.StatusUnprocessableEntity, "The file has no rows.")
	case errors.Is(err, lists.ErrBadEncoding), errors.Is(err, lists.ErrNUL):
		d.refuseUpload(w, r, a, http.StatusUnprocessableEntity, "The file is not UTF-8 text"+lineOf(pe, err)+". Save it from your spreadsheet as “CSV UTF-8” and upload it again.")
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
	dec, err := d.limits.quotas.Take(ctx, bulkKey(account), 0, d.bulkQuota())
	if err != nil {
		return listCost{}, err
	}
	bal, err := d.cfg.Ledger.Balance(ctx, account)
	if err != nil {
		return listCost{}, err
	}
	c := listCost{Free: min(dec.Remaining, unique), Balance: bal, Remaining: dec.Remaining, Limit: d.cfg.BulkLimit, Window: humanWait(d.cfg.BulkWindow)}
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
	Cost        listCost
}

func (d *Dashboard) previewData(ctx context.Context, p *pendingList) (listPreviewData, error) {
	pv := p.pv
	data := listPreviewData{Token: p.token, Name: p.name, Text: p.text, Column: pv.Column + 1, HasHeader: pv.HasHeader,
		Rows: pv.Rows, Unique: pv.Unique, Duplicates: pv.Duplicates, Invalid: pv.InvalidRows, Columns: pv.Header}
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
	d.fail(w, r, http.StatusNotFound, "This upload is no longer waiting: it was submitted, cancelled, replaced by a newer upload, or kept longer than 30 minutes. Upload the file again on the Bulk page.")
}

func (d *Dashboard) listPreviewPage(w http.ResponseWriter, r *http.Request, a store.Account) {
	p := d.lists.get(r.PathValue("token"), a.ID)
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
	p := d.lists.take(r.PathValue("token"), a.ID)
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
		d.lists.restore(p)
		d.renderPreview(w, r, a, p, http.StatusConflict, fmt.Sprintf(
			"The cost of this list changed since its preview: it now needs %s credits instead of %s (the free allowance was used meanwhile). Nothing was submitted; confirm again to validate it at this cost.",
			thousands(credits), thousands(previewed)))
	}
	c, err := d.cost(ctx, a.ID, p.pv.Unique)
	if err != nil {
		d.lists.restore(p)
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
		dec, err := d.limits.quotas.Take(ctx, bulkKey(a.ID), c.Free, d.bulkQuota())
		if err != nil {
			d.lists.restore(p)
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
	info, err := lists.Submit(ctx, d.cfg.Queue, p.sp, lists.SubmitParams{AccountID: a.ID, Name: p.name, Source: jobs.SourceDashboard, FreeAddresses: free})
	if err != nil {
		if free > 0 {
			d.refundBulk(ctx, a.ID, free, window)
		}
		switch {
		case errors.Is(err, credits.ErrInsufficient):
			d.lists.restore(p)
			d.renderPreview(w, r, a, p, http.StatusPaymentRequired, "The account does not have the credits this list needs (its balance changed since the preview). Nothing was submitted.")
		case errors.Is(err, jobs.ErrEmptyBatch):
			p.sp.Close()
			d.refuseUpload(w, r, a, http.StatusUnprocessableEntity, "No row of the list holds an address. Nothing was submitted.")
		default:
			d.lists.restore(p)
			d.backendError(w, r, "list submit", err)
		}
		return
	}
	p.sp.Close()
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
	p := d.lists.get(token, a.ID)
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
	release, why := d.lists.slots.Take(a.ID)
	if why != uploads.Granted {
		retryAfter(w, 5*time.Second)
		msg := "Too many lists are being uploaded right now. Try the column again in a moment."
		if why == uploads.AccountBusy {
			msg = fmt.Sprintf("This account is uploading %d lists already. Try the column again when one of them is done.", httpapi.MaxListUploadsPerAccount)
		}
		d.renderPreview(w, r, a, p, http.StatusTooManyRequests, msg)
		return
	}
	defer release()
	if p = d.lists.take(token, a.ID); p == nil {
		d.gone(w, r)
		return
	}
	if d.lists.respooling != nil {
		d.lists.respooling()
	}
	sp, err := d.respool(ctx, p.sp, col)
	if err != nil {
		d.lists.restore(p)
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
		d.lists.restore(p)
		d.backendError(w, r, "list preview", err)
		return
	}
	p.sp.Close()
	np := &pendingList{token: newToken(), account: a.ID, name: p.name, sp: sp, pv: pv}
	d.lists.put(np)
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
	if p := d.lists.take(r.PathValue("token"), a.ID); p != nil {
		p.sp.Close()
		d.flash(r.Context(), "The upload is cancelled; nothing was submitted.")
	}
	d.redirect(w, r, "/bulk")
}

// listGroup is a download of a list's rows by what to do with them.
type listGroup struct {
	Group, Label, Help, URL string
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
	return []listGroup{
		{string(httpapi.GroupSafe), "Safe to send", "Deliverable and likely addresses that are not role accounts.", u + "?group=safe"},
		{string(httpapi.GroupRisky), "Risky", "Catch-all domains, unknown answers and role accounts (info@, sales@).", u + "?group=risky"},
		{string(httpapi.GroupRemove), "Remove", "Undeliverable, disposable, invalid and rows without an address.", u + "?group=remove"},
		{"", "All rows", "Every row of the file, in its order, with its verdict.", u},
	}, nil
}

// listCSV streams a list batch's rows as CSV, the uploaded columns first,
// as the API's export of the list does; ?group= keeps one group.
func (d *Dashboard) listCSV(w http.ResponseWriter, r *http.Request, a store.Account) {
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
	const page = 1000
	rows, err := d.cfg.Queue.ListRows(ctx, jobs.ListRowsParams{AccountID: a.ID, BatchID: b.ID, After: -1, Limit: page})
	if err != nil {
		d.backendError(w, r, "list export", err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/csv; charset=utf-8")
	h.Set("Content-Disposition", `attachment; filename="`+downloadName(batchRow{Batch: b}, string(group))+`"`)
	h.Set("Cache-Control", "no-store")
	bw := bufio.NewWriterSize(w, 64<<10)
	cw := csv.NewWriter(bw)
	cw.Write(httpapi.ListCSVHeader(info.Header))
	width := len(info.Header)
	for len(rows) > 0 {
		for _, row := range rows {
			if keepListRow(row, group) {
				cw.Write(httpapi.ListCSVRecord(width, row))
			}
		}
		if len(rows) < page {
			break
		}
		if rows, err = d.cfg.Queue.ListRows(ctx, jobs.ListRowsParams{AccountID: a.ID, BatchID: b.ID, After: rows[len(rows)-1].N, Limit: page}); err != nil {
			d.cfg.Logger.ErrorContext(ctx, "dashboard: list export", "err", err)
			// The rows sent so far must not pass for the whole file:
			// abort the response, so the download visibly fails.
			panic(http.ErrAbortHandler)
		}
	}
	cw.Flush()
	bw.Flush()
}

// keepListRow tells whether a list's row belongs in the download of
// group: a row without an address is to remove; an address still being
// validated is in no group yet.
func keepListRow(row jobs.ListRow, group httpapi.Group) bool {
	switch {
	case group == "":
		return true
	case row.Job == nil:
		return group == httpapi.GroupRemove
	case row.Job.State != jobs.StateCompleted || row.Job.Result == nil:
		return false
	}
	return httpapi.GroupOf(row.Job.Result) == group
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
