package dashboard

import (
	"encoding/csv"
	"errors"
	"fmt"
	"html/template"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/httpapi"
	"github.com/validmail/validmail/httpapi/internal/buckets"
	"github.com/validmail/validmail/jobs"
	"github.com/validmail/validmail/store"
	"github.com/validmail/validmail/webhook"
)

// statusCount is one status and how many results had it.
type statusCount struct {
	Status string
	N      int
}

func sortedCounts(m map[emailcheck.Status]int) []statusCount {
	out := make([]statusCount, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, statusCount{string(k), m[k]})
	}
	return out
}

// batchRow is a batch as the pages show it.
type batchRow struct {
	jobs.Batch
	Counts  []statusCount
	Percent int
	URL     string
}

func (d *Dashboard) row(b jobs.Batch) batchRow {
	return batchRow{Batch: b, Counts: sortedCounts(b.Counts), Percent: percent(b.Completed, b.Total), URL: d.path("/batches/" + b.ID)}
}

type overviewData struct {
	Balance          int64
	Plan             string
	Month            string
	MonthCounts      []statusCount
	MonthValidations int
	AllValidations   bool // the counts include single validations
	Charged          int64
	Refunded         int64
	// Where the balance came from since the account's creation, and the
	// operator's checkout, if any.
	Sources    credits.Summary
	BillingURL string
	Chart      template.HTML
	Batches    []batchRow
}

func (d *Dashboard) overview(w http.ResponseWriter, r *http.Request, a store.Account) {
	ctx := r.Context()
	bal, err := d.cfg.Ledger.Balance(ctx, a.ID)
	if err != nil {
		d.backendError(w, r, "balance", err)
		return
	}
	now := d.cfg.Now().UTC()
	monthStart := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	data := overviewData{Balance: bal, Plan: a.Plan, Month: now.Format("January 2006"), BillingURL: d.cfg.BillingURL}
	// A read per 400 days of the account's life, whatever its history.
	if data.Sources, err = d.cfg.Ledger.Summary(ctx, credits.SummaryParams{AccountID: a.ID, From: a.CreatedAt, To: now.AddDate(0, 0, 1)}); err != nil {
		d.backendError(w, r, "credit summary", err)
		return
	}
	// The month's figures and the chart's days come from the ledger's
	// per-day totals: the same few rows at ten entries or ten million.
	from := credits.Day(now).AddDate(0, 0, -(chartDays - 1))
	if monthStart.Before(from) {
		from = monthStart
	}
	totals, err := d.cfg.Ledger.Totals(ctx, credits.TotalsParams{
		AccountID: a.ID,
		From:      from,
		To:        monthStart.AddDate(0, 1, 0),
	})
	if err != nil {
		d.backendError(w, r, "credit totals", err)
		return
	}
	for _, t := range totals {
		if t.Day.Before(monthStart) {
			continue
		}
		switch t.Reason {
		case credits.ReasonCharge:
			data.Charged -= t.Sum
		case credits.ReasonRefund:
			data.Refunded += t.Sum
		}
	}
	data.Chart = usageChart(totals, now, chartDays)
	counts := map[emailcheck.Status]int{}
	before := ""
	for range 20 { // at most 20 pages of 100 batches this month
		bs, err := d.cfg.Queue.Batches(ctx, jobs.BatchesParams{AccountID: a.ID, Limit: 100, Before: before})
		if err != nil {
			d.backendError(w, r, "batches", err)
			return
		}
		for _, b := range bs {
			if len(data.Batches) < 5 {
				data.Batches = append(data.Batches, d.row(b))
			}
			if b.CreatedAt.Before(monthStart) {
				bs = nil
				break
			}
			for k, n := range b.Counts {
				counts[k] += n
				data.MonthValidations += n
			}
		}
		if len(bs) < 100 {
			break
		}
		before = bs[len(bs)-1].ID
	}
	if d.cfg.Usage != nil {
		// Every validation of the month, single and batch, not only the
		// batches'.
		m, err := d.cfg.Usage.MonthUsage(ctx, a.ID, now)
		if err != nil {
			d.backendError(w, r, "usage", err)
			return
		}
		counts, data.MonthValidations, data.AllValidations = map[emailcheck.Status]int{}, 0, true
		for k, n := range m {
			counts[emailcheck.Status(k)] += n
			data.MonthValidations += n
		}
	}
	data.MonthCounts = sortedCounts(counts)
	d.render(w, r, http.StatusOK, "overview", page{Title: "Overview", Nav: "overview", Email: a.Email, Data: data})
}

// Keys.

type keyRow struct {
	store.Key
	Perms []string
}

// permissionChoice is a permission the key form offers, with what it
// opens.
type permissionChoice struct {
	Name, Help string
}

// permissionHelp says what each permission opens, on the key form.
var permissionHelp = map[store.Permission]string{
	store.PermValidate: "GET /validate",
	store.PermBatch:    "batches and their results",
	store.PermStats:    "the account's balance and credit history",
	store.PermKeys:     "create and revoke keys",
	store.PermWebhooks: "the webhook and its deliveries",
}

type keysData struct {
	Keys        []keyRow
	Permissions []permissionChoice
	Name        string
	Checked     []string
	NewKey      string
	NewKeyName  string
}

func (d *Dashboard) keysData(r *http.Request, a store.Account) (keysData, error) {
	ks, err := d.cfg.Accounts.ListKeys(r.Context(), a.ID)
	if err != nil {
		return keysData{}, err
	}
	data := keysData{}
	for _, p := range d.cfg.KeyPermissions {
		data.Permissions = append(data.Permissions, permissionChoice{Name: string(p), Help: permissionHelp[p]})
	}
	// A new key can do what the signup key does (stats included, so that
	// GET /api/v1/account answers), as far as the console grants it.
	for _, p := range store.SignupPermissions() {
		if slices.Contains(d.cfg.KeyPermissions, p) {
			data.Checked = append(data.Checked, string(p))
		}
	}
	for _, k := range slices.Backward(ks) {
		kr := keyRow{Key: k}
		for _, p := range k.Permissions {
			kr.Perms = append(kr.Perms, string(p))
		}
		data.Keys = append(data.Keys, kr)
	}
	return data, nil
}

func (d *Dashboard) keysPage(w http.ResponseWriter, r *http.Request, a store.Account) {
	data, err := d.keysData(r, a)
	if err != nil {
		d.backendError(w, r, "list keys", err)
		return
	}
	d.render(w, r, http.StatusOK, "keys", page{Title: "API Keys", Nav: "keys", Email: a.Email, Data: data})
}

func (d *Dashboard) createKey(w http.ResponseWriter, r *http.Request, a store.Account) {
	ctx := r.Context()
	data, err := d.keysData(r, a)
	if err != nil {
		d.backendError(w, r, "list keys", err)
		return
	}
	if err := r.ParseForm(); err != nil {
		d.fail(w, r, http.StatusBadRequest, "The form could not be read.")
		return
	}
	name := strings.TrimSpace(r.PostForm.Get("name"))
	data.Name, data.Checked = name, r.PostForm["permissions"]
	refuse := func(status int, field, msg string) {
		d.render(w, r, status, "keys", page{Title: "API Keys", Nav: "keys", Email: a.Email, Error: msg, Field: field, Data: data})
	}
	if len(name) > 100 || strings.ContainsFunc(name, func(c rune) bool { return c < 0x20 || c == 0x7f }) {
		refuse(http.StatusUnprocessableEntity, "name", "A key's name has at most 100 characters, without control characters.")
		return
	}
	var perms []store.Permission
	for _, s := range r.PostForm["permissions"] {
		p := store.Permission(s)
		if !slices.Contains(d.cfg.KeyPermissions, p) {
			refuse(http.StatusUnprocessableEntity, "permissions", "The console cannot grant the permission "+s+".")
			return
		}
		if !slices.Contains(perms, p) {
			perms = append(perms, p)
		}
	}
	if len(perms) == 0 {
		refuse(http.StatusUnprocessableEntity, "permissions", "Choose at least one permission.")
		return
	}
	k, secret, err := d.cfg.Accounts.CreateKey(ctx, store.CreateKeyParams{AccountID: a.ID, Name: name, Permissions: perms, MaxActive: d.cfg.MaxKeys})
	if errors.Is(err, store.ErrKeyLimit) {
		// The page shows the keys as they are now, and counts them.
		fresh, err := d.keysData(r, a)
		if err != nil {
			d.backendError(w, r, "list keys", err)
			return
		}
		fresh.Name, fresh.Checked = data.Name, data.Checked
		data = fresh
		active := 0
		for _, k := range data.Keys {
			if !k.Revoked() {
				active++
			}
		}
		refuse(http.StatusConflict, "name", fmt.Sprintf("The account holds %d active keys, the most allowed; revoke one first.", active))
		return
	}
	if err != nil {
		d.backendError(w, r, "create key", err)
		return
	}
	d.audit(ctx, a, "key.created", keyDetail(k))
	if data, err = d.keysData(r, a); err != nil {
		d.backendError(w, r, "list keys", err)
		return
	}
	data.NewKey, data.NewKeyName = secret, name
	w.Header().Set("Cache-Control", "no-store")
	d.render(w, r, http.StatusCreated, "keys", page{Title: "API Keys", Nav: "keys", Email: a.Email, Data: data})
}

func (d *Dashboard) findKey(r *http.Request, a store.Account) (store.Key, error) {
	ks, err := d.cfg.Accounts.ListKeys(r.Context(), a.ID)
	if err != nil {
		return store.Key{}, err
	}
	for _, k := range ks {
		if k.ID == r.PathValue("id") {
			return k, nil
		}
	}
	return store.Key{}, store.ErrNotFound
}

func (d *Dashboard) revokePage(w http.ResponseWriter, r *http.Request, a store.Account) {
	k, err := d.findKey(r, a)
	if errors.Is(err, store.ErrNotFound) {
		d.fail(w, r, http.StatusNotFound, "There is no such key.")
		return
	}
	if err != nil {
		d.backendError(w, r, "find key", err)
		return
	}
	d.render(w, r, http.StatusOK, "revoke", page{Title: "Revoke a key", Nav: "keys", Email: a.Email, Data: k})
}

func (d *Dashboard) revokeKey(w http.ResponseWriter, r *http.Request, a store.Account) {
	k, err := d.findKey(r, a)
	if err == nil {
		err = d.cfg.Accounts.RevokeKey(r.Context(), a.ID, k.ID)
	}
	if errors.Is(err, store.ErrNotFound) {
		d.fail(w, r, http.StatusNotFound, "There is no such key.")
		return
	}
	if err != nil {
		d.backendError(w, r, "revoke key", err)
		return
	}
	if !k.Revoked() {
		d.audit(r.Context(), a, "key.revoked", keyDetail(k))
	}
	d.flash(r.Context(), "The key is revoked: requests carrying it are refused from now on.")
	d.redirect(w, r, "/keys")
}

// Webhook.

type deliveryRow struct {
	webhook.Delivery
	Last webhook.Attempt
}

type webhookData struct {
	Available  bool
	Endpoint   *webhook.Endpoint
	URL        string
	Events     []string
	AllEvents  []string
	Enabled    bool
	Secret     string
	Test       *webhook.Attempt // a test sent outside the outbox (a console without one)
	Deliveries []deliveryRow
	// TestID names the test event the page reports on, TestDelivery is
	// it as the delivery log has it (nil until listed), and TestWaiting
	// says its first attempt is still to come: the page then reloads.
	TestID       string
	TestDelivery *deliveryRow
	TestWaiting  bool
	TestPoll     string // the page's own URL, polled while TestWaiting
}

// testWait is how long the webhook page keeps reloading for a test
// event's first attempt.
const testWait = time.Minute

func (d *Dashboard) webhookData(r *http.Request, a store.Account) (webhookData, error) {
	data := webhookData{Available: d.cfg.Endpoints != nil, AllEvents: webhook.EventTypes, Events: webhook.EventTypes, Enabled: true}
	if !data.Available {
		return data, nil
	}
	ep, err := d.cfg.Endpoints.GetEndpoint(r.Context(), a.ID)
	switch {
	case errors.Is(err, webhook.ErrNotFound):
	case err != nil:
		return data, err
	default:
		data.Endpoint, data.URL, data.Enabled = &ep, ep.URL, ep.Enabled
		if len(ep.Events) > 0 {
			data.Events = ep.Events
		}
	}
	if d.cfg.Outbox != nil {
		ds, err := d.cfg.Outbox.Deliveries(r.Context(), webhook.ListParams{AccountID: a.ID, Limit: 20})
		if err != nil {
			return data, err
		}
		for _, dl := range ds {
			dr := deliveryRow{Delivery: dl}
			if n := len(dl.Attempts); n > 0 {
				dr.Last = dl.Attempts[n-1]
			}
			data.Deliveries = append(data.Deliveries, dr)
		}
	}
	return data, nil
}

func (d *Dashboard) webhookPage(w http.ResponseWriter, r *http.Request, a store.Account) {
	data, err := d.webhookData(r, a)
	if err != nil {
		d.backendError(w, r, "webhook", err)
		return
	}
	// ?test= names the test event just queued: the page reports its
	// delivery from the log, reloading until the first attempt.
	if id := r.URL.Query().Get("test"); id != "" && len(id) <= 64 && strings.HasPrefix(id, "msg_") {
		data.TestID = id
		data.TestWaiting = true
		for i := range data.Deliveries {
			if dl := &data.Deliveries[i]; dl.ID == id {
				data.TestDelivery = dl
				// Pending with a 2xx answer: the attempt is recorded and
				// the delivered state is about to be.
				answered := len(dl.Attempts) > 0 && dl.Attempts[len(dl.Attempts)-1].StatusCode/100 == 2
				data.TestWaiting = dl.State == webhook.StatePending && (len(dl.Attempts) == 0 || answered) &&
					d.cfg.Now().Sub(dl.CreatedAt) < testWait
			}
		}
		if data.TestDelivery == nil {
			// Not in the newest page of the log: too old to wait for.
			data.TestWaiting = false
		}
		if data.TestWaiting {
			data.TestPoll = d.path("/webhook?test=" + url.QueryEscape(id))
		}
	}
	d.render(w, r, http.StatusOK, "webhook", page{Title: "Webhook", Nav: "webhook", Email: a.Email, Data: data, Refresh: data.TestWaiting})
}

// deleteWebhookPage asks to confirm the endpoint's removal.
func (d *Dashboard) deleteWebhookPage(w http.ResponseWriter, r *http.Request, a store.Account) {
	if d.cfg.Endpoints == nil {
		d.fail(w, r, http.StatusNotFound, "Webhooks are not available on this deployment.")
		return
	}
	ep, err := d.cfg.Endpoints.GetEndpoint(r.Context(), a.ID)
	if errors.Is(err, webhook.ErrNotFound) {
		d.fail(w, r, http.StatusNotFound, "There is no webhook to delete.")
		return
	}
	if err != nil {
		d.backendError(w, r, "webhook", err)
		return
	}
	d.render(w, r, http.StatusOK, "webhookdelete", page{Title: "Delete the webhook", Nav: "webhook", Email: a.Email, Data: ep})
}

// deleteWebhook removes the endpoint. Events not yet delivered are then
// given up ("no webhook endpoint configured"); the delivery log stays.
func (d *Dashboard) deleteWebhook(w http.ResponseWriter, r *http.Request, a store.Account) {
	if d.cfg.Endpoints == nil {
		d.fail(w, r, http.StatusNotFound, "Webhooks are not available on this deployment.")
		return
	}
	err := d.cfg.Endpoints.DeleteEndpoint(r.Context(), a.ID)
	if errors.Is(err, webhook.ErrNotFound) {
		d.fail(w, r, http.StatusNotFound, "There is no webhook to delete.")
		return
	}
	if err != nil {
		d.backendError(w, r, "delete webhook", err)
		return
	}
	d.audit(r.Context(), a, "webhook.deleted", "")
	d.endpointChanged(a.ID)
	d.flash(r.Context(), "The webhook is deleted: no more events are sent. Its signing secret is gone; saving a URL again creates a new one.")
	d.redirect(w, r, "/webhook")
}

func (d *Dashboard) saveWebhook(w http.ResponseWriter, r *http.Request, a store.Account) {
	ctx := r.Context()
	data, err := d.webhookData(r, a)
	if err != nil {
		d.backendError(w, r, "webhook", err)
		return
	}
	if !data.Available {
		d.fail(w, r, http.StatusNotFound, "Webhooks are not available on this deployment.")
		return
	}
	if err := r.ParseForm(); err != nil {
		d.fail(w, r, http.StatusBadRequest, "The form could not be read.")
		return
	}
	url := strings.TrimSpace(r.PostForm.Get("url"))
	events := r.PostForm["events"]
	data.URL, data.Events, data.Enabled = url, events, r.PostForm.Get("enabled") != ""
	refuse := func(field, msg string) {
		d.render(w, r, http.StatusUnprocessableEntity, "webhook", page{Title: "Webhook", Nav: "webhook", Email: a.Email, Error: msg, Field: field, Data: data})
	}
	if err := webhook.ValidateURL(url); err != nil {
		refuse("url", "Enter an absolute http or https URL, without user information or fragment.")
		return
	}
	if len(events) == 0 || webhook.CheckEventTypes(events) != nil {
		refuse("events", "Choose at least one event.")
		return
	}
	// Every type checked is the default: a list sends its batch.completed
	// alone. (The API's PUT /api/v1/webhook naming validation.completed
	// asks for a list's addresses too.)
	kept := webhook.NormalizeEvents(events)
	if len(kept) == len(webhook.EventTypes) {
		kept = nil
	}
	p := webhook.PutEndpointParams{AccountID: a.ID, URL: url, Enabled: data.Enabled, Events: kept, Now: d.cfg.Now()}
	if data.Endpoint == nil {
		p.Secret = webhook.NewSecret()
	}
	ep, created, err := d.cfg.Endpoints.PutEndpoint(ctx, p)
	if err != nil {
		d.backendError(w, r, "save webhook", err)
		return
	}
	d.audit(ctx, a, map[bool]string{true: "webhook.created", false: "webhook.changed"}[created], url)
	d.endpointChanged(a.ID)
	if !created {
		d.flash(ctx, "The webhook is saved.")
		d.redirect(w, r, "/webhook")
		return
	}
	if data, err = d.webhookData(r, a); err != nil {
		d.backendError(w, r, "webhook", err)
		return
	}
	data.Secret = ep.Secret
	w.Header().Set("Cache-Control", "no-store")
	d.render(w, r, http.StatusCreated, "webhook", page{Title: "Webhook", Nav: "webhook", Email: a.Email, Data: data})
}

func (d *Dashboard) endpointChanged(account string) {
	if d.cfg.EndpointChanged != nil {
		d.cfg.EndpointChanged(account)
	}
}

func (d *Dashboard) rotateWebhook(w http.ResponseWriter, r *http.Request, a store.Account) {
	if d.cfg.Endpoints == nil {
		d.fail(w, r, http.StatusNotFound, "Webhooks are not available on this deployment.")
		return
	}
	now := d.cfg.Now()
	ep, err := d.cfg.Endpoints.RotateSecret(r.Context(), webhook.RotateSecretParams{
		AccountID: a.ID, Secret: webhook.NewSecret(), Now: now, PreviousExpiresAt: now.Add(webhook.RotationGrace),
	})
	if errors.Is(err, webhook.ErrNotFound) {
		d.fail(w, r, http.StatusNotFound, "Save a webhook first.")
		return
	}
	if err != nil {
		d.backendError(w, r, "rotate secret", err)
		return
	}
	d.audit(r.Context(), a, "webhook.secret_rotated", ep.URL)
	data, err := d.webhookData(r, a)
	if err != nil {
		d.backendError(w, r, "webhook", err)
		return
	}
	data.Secret = ep.Secret
	w.Header().Set("Cache-Control", "no-store")
	d.render(w, r, http.StatusOK, "webhook", page{Title: "Webhook", Nav: "webhook", Email: a.Email,
		Flash: "A new signing secret is in use; the previous one keeps signing for 24 hours.", Data: data})
}

// testWebhook sends a webhook.test event. With an outbox it goes through
// it like every other event (signed, attempted by the dispatcher, retried,
// listed in the delivery log) and the page follows its delivery; without
// one it is sent once, now, and only this answer shows the attempt.
func (d *Dashboard) testWebhook(w http.ResponseWriter, r *http.Request, a store.Account) {
	if d.cfg.Endpoints == nil || (d.cfg.Sender == nil && d.cfg.Outbox == nil) {
		d.fail(w, r, http.StatusNotFound, "Webhooks are not available on this deployment.")
		return
	}
	ep, err := d.cfg.Endpoints.GetEndpoint(r.Context(), a.ID)
	if errors.Is(err, webhook.ErrNotFound) {
		d.fail(w, r, http.StatusNotFound, "Save a webhook first.")
		return
	}
	if err != nil {
		d.backendError(w, r, "webhook", err)
		return
	}
	if ok, wait := d.allow(r, buckets.WebhookTest(a.ID), d.cfg.WebhookTestLimit); !ok {
		data, err := d.webhookData(r, a)
		if err != nil {
			d.backendError(w, r, "webhook", err)
			return
		}
		retryAfter(w, wait)
		d.render(w, r, http.StatusTooManyRequests, "webhook", page{Title: "Webhook", Nav: "webhook", Email: a.Email, Data: data,
			Error: "Too many test events were sent for this account. Try again in " + humanWait(wait) + "."})
		return
	}
	ev := webhook.NewTestEvent(a.ID, d.cfg.Now())
	if d.cfg.Outbox != nil {
		if err := d.cfg.Outbox.Enqueue(r.Context(), ev); err != nil {
			d.backendError(w, r, "test event", err)
			return
		}
		// Deliver it now rather than at the dispatcher's next poll.
		if n, ok := d.cfg.Sender.(interface{ Notify() }); ok {
			n.Notify()
		}
		d.redirect(w, r, "/webhook?test="+url.QueryEscape(ev.ID))
		return
	}
	att := d.cfg.Sender.Send(r.Context(), ep, ev)
	data, err := d.webhookData(r, a)
	if err != nil {
		d.backendError(w, r, "webhook", err)
		return
	}
	data.Test = &att
	d.render(w, r, http.StatusOK, "webhook", page{Title: "Webhook", Nav: "webhook", Email: a.Email, Data: data})
}

// Bulk.

type bulkData struct {
	Emails    string
	Limit     int
	Window    string
	Remaining int
	Report    *list // the lines of a refused list that were left out
}

// bulkData is the bulk page's data: the quota and what the account has
// left of it now.
func (d *Dashboard) bulkData(r *http.Request, a store.Account) (bulkData, error) {
	quota := d.bulkQuota(r.Context(), a.ID)
	dec, err := d.limits.quotas.Take(r.Context(), bulkKey(a.ID), 0, quota)
	return bulkData{Limit: quota.Limit, Window: humanWait(d.cfg.BulkWindow), Remaining: dec.Remaining}, err
}

func (d *Dashboard) bulkPage(w http.ResponseWriter, r *http.Request, a store.Account) {
	data, err := d.bulkData(r, a)
	if err != nil {
		d.backendError(w, r, "bulk", err)
		return
	}
	d.render(w, r, http.StatusOK, "bulk", page{Title: "Bulk validation", Nav: "bulk", Email: a.Email, Data: data})
}

// maxUpload bounds a bulk upload.
const maxUpload = 1 << 20

func (d *Dashboard) submitBulk(w http.ResponseWriter, r *http.Request, a store.Account) {
	ctx := r.Context()
	data, err := d.bulkData(r, a)
	if err != nil {
		d.backendError(w, r, "bulk", err)
		return
	}
	refuse := func(status int, field, msg string) {
		d.render(w, r, status, "bulk", page{Title: "Bulk validation", Nav: "bulk", Email: a.Email, Error: msg, Field: field, Data: data})
	}
	// The body was read under maxBulkBody (see bounded).
	var lst list
	field := "emails"
	if r.MultipartForm != nil {
		if f, hdr, err := r.FormFile("file"); err == nil {
			defer f.Close()
			name := strings.ToLower(hdr.Filename)
			if !strings.HasSuffix(name, ".txt") && !strings.HasSuffix(name, ".csv") {
				refuse(http.StatusUnprocessableEntity, "file", "Upload a .txt file with one address per line, or a .csv file with an email column.")
				return
			}
			field = "file"
			if lst, err = readList(f, strings.HasSuffix(name, ".csv")); err != nil {
				refuse(http.StatusUnprocessableEntity, "file", listMessage(err))
				return
			}
		}
	}
	if len(lst.Emails) == 0 && lst.NSkipped == 0 {
		field = "emails"
		pasted := r.FormValue("emails")
		data.Emails = strings.ReplaceAll(strings.ToValidUTF8(pasted, "\uFFFD"), "\x00", "\uFFFD")
		if lst, err = readPasted(pasted); err != nil {
			refuse(http.StatusUnprocessableEntity, "emails", listMessage(err))
			return
		}
	}
	emails := lst.Emails
	if len(emails) == 0 {
		if lst.NSkipped > 0 {
			data.Report = &lst
			refuse(http.StatusUnprocessableEntity, field, "No line of the list holds an address we can read; nothing was submitted. The lines left out are listed below.")
			return
		}
		refuse(http.StatusUnprocessableEntity, "emails", "Paste at least one address, one per line, or choose a file.")
		return
	}
	dec, err := d.limits.quotas.Take(ctx, bulkKey(a.ID), len(emails), d.bulkQuota(ctx, a.ID))
	if err != nil {
		d.backendError(w, r, "bulk", err)
		return
	}
	if !dec.Allowed {
		data.Remaining = dec.Remaining
		more := "More are allowed in " + humanWait(dec.Reset) + "."
		if len(emails) > d.cfg.BulkLimit {
			more = fmt.Sprintf("Split the list into parts of at most %d.", d.cfg.BulkLimit)
		}
		retryAfter(w, dec.Reset)
		refuse(http.StatusTooManyRequests, "emails", fmt.Sprintf(
			"The free bulk tool takes %d addresses per %s; this list has %d and %d remain. Nothing was submitted. %s",
			d.cfg.BulkLimit, humanWait(d.cfg.BulkWindow), len(emails), dec.Remaining, more))
		return
	}
	ids, err := d.cfg.Queue.EnqueueWith(ctx, jobs.EnqueueParams{AccountID: a.ID, Emails: emails, Source: jobs.SourceDashboard})
	if err != nil {
		d.refundBulk(ctx, a.ID, len(emails), dec.Window) // nothing was submitted
		d.backendError(w, r, "bulk", err)
		return
	}
	d.keepReport(ctx, ids[0], lst)
	d.redirect(w, r, "/batches/"+ids[0])
}

// Batches.

type batchesData struct {
	Batches []batchRow
	Next    string
}

func (d *Dashboard) batchesPage(w http.ResponseWriter, r *http.Request, a store.Account) {
	before := r.URL.Query().Get("before")
	bs, err := d.cfg.Queue.Batches(r.Context(), jobs.BatchesParams{AccountID: a.ID, Limit: 25, Before: before})
	if err != nil {
		d.backendError(w, r, "batches", err)
		return
	}
	data := batchesData{}
	for _, b := range bs {
		data.Batches = append(data.Batches, d.row(b))
	}
	if len(bs) == 25 {
		data.Next = bs[len(bs)-1].ID
	}
	d.render(w, r, http.StatusOK, "batches", page{Title: "Batches", Nav: "batches", Email: a.Email, Data: data})
}

type resultRow struct {
	jobs.Job
	Status string
	Score  int
}

type batchData struct {
	batchRow
	Statuses []string
	Filter   string
	Results  []resultRow
	More     bool
	After    string
	Report   *list // the lines of the submitted list that were left out
	// Groups are the downloads of a list batch's rows; nil for others.
	Groups []listGroup
	// List counts a list's rows; nil for a batch that is not a list.
	List *jobs.ListInfo
	// Counting tells that a large list's groups are being counted.
	Counting bool
	// Slow counts the last jobs of an active batch, waiting on domains
	// that answer slowly: 0 unless few are left.
	Slow int
}

const resultsPerPage = 100

// slowTail returns how many jobs an active batch still waits on when they
// are its last few (at most 1 %, or 10), which are most often those of
// domains that answer slowly or not at all; 0 otherwise.
func slowTail(b jobs.Batch) int {
	left := b.Total - b.Completed
	if b.State == jobs.StateCompleted || left <= 0 || b.Completed == 0 || left > max(10, b.Total/100) {
		return 0
	}
	return left
}

func (d *Dashboard) batch(w http.ResponseWriter, r *http.Request, a store.Account) (jobs.Batch, bool) {
	b, err := d.cfg.Queue.Batch(r.Context(), a.ID, r.PathValue("id"))
	if errors.Is(err, jobs.ErrNotFound) {
		d.fail(w, r, http.StatusNotFound, "There is no such batch.")
		return b, false
	}
	if err != nil {
		d.backendError(w, r, "batch", err)
		return b, false
	}
	return b, true
}

func (d *Dashboard) batchPage(w http.ResponseWriter, r *http.Request, a store.Account) {
	b, ok := d.batch(w, r, a)
	if !ok {
		return
	}
	data := batchData{batchRow: d.row(b), Filter: r.URL.Query().Get("status"), Report: d.report(r.Context(), b.ID)}
	groups, err := d.listGroups(r.Context(), a.ID, b)
	if err != nil {
		d.backendError(w, r, "batch list", err)
		return
	}
	data.Groups = groups
	if groups != nil {
		if info, err := d.cfg.Queue.List(r.Context(), a.ID, b.ID); err == nil {
			data.List = &info
			sizes, counting, err := d.lists.sizes.of(r.Context(), d.cfg.Queue, b, info, d.cfg.Logger)
			data.Counting = counting
			if err != nil {
				d.backendError(w, r, "batch list", err)
				return
			}
			for i := range groups {
				if sizes != nil {
					g := httpapi.Group(groups[i].Group)
					groups[i].Rows, groups[i].Sized = sizes[g], true
					if g == "" {
						groups[i].Rows = info.Rows
					}
				}
			}
		}
	}
	data.Slow = slowTail(b)
	for _, c := range data.Counts {
		data.Statuses = append(data.Statuses, c.Status)
	}
	// A page holds resultsPerPage results; the next kept result, if
	// any, says there is a next page (read one past, so that a batch of
	// exactly a page's results gets no empty next page, and one more
	// still gets its link).
	after := r.URL.Query().Get("after")
	for !data.More {
		js, err := d.cfg.Queue.BatchJobs(r.Context(), jobs.BatchJobsParams{AccountID: a.ID, BatchID: b.ID, Limit: resultsPerPage + 1, After: after})
		if err != nil {
			d.backendError(w, r, "batch results", err)
			return
		}
		for _, j := range js {
			after = j.ID
			rr := resultRow{Job: j}
			if j.Result != nil {
				rr.Status, rr.Score = string(j.Result.Confidence.Status), j.Result.Confidence.Score
			}
			if data.Filter != "" && rr.Status != data.Filter {
				continue
			}
			if len(data.Results) == resultsPerPage {
				data.More, data.After = true, data.Results[len(data.Results)-1].ID
				break
			}
			data.Results = append(data.Results, rr)
		}
		if len(js) <= resultsPerPage {
			break
		}
	}
	d.render(w, r, http.StatusOK, "batch", page{Title: data.Title(), Nav: "batches", Email: a.Email, Data: data,
		Refresh: b.State != jobs.StateCompleted})
}

func (d *Dashboard) batchProgress(w http.ResponseWriter, r *http.Request, a store.Account) {
	b, ok := d.batch(w, r, a)
	if !ok {
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if b.State == jobs.StateCompleted {
		// Reload the page once, for its results.
		w.Header().Set("HX-Refresh", "true")
	}
	if err := d.pages["batch"].ExecuteTemplate(w, "progress", page{Prefix: d.cfg.Prefix, Data: batchData{batchRow: d.row(b), Slow: slowTail(b)}}); err != nil {
		d.cfg.Logger.ErrorContext(r.Context(), "dashboard: template", "err", err)
	}
}

func (d *Dashboard) batchCSV(w http.ResponseWriter, r *http.Request, a store.Account) {
	b, ok := d.batch(w, r, a)
	if !ok {
		return
	}
	filter := r.URL.Query().Get("status")
	h := w.Header()
	h.Set("Content-Type", "text/csv; charset=utf-8")
	h.Set("Content-Disposition", `attachment; filename="batch-`+b.ID+`.csv"`)
	h.Set("Cache-Control", "no-store")
	cw := csv.NewWriter(w)
	cw.Write(httpapi.BatchCSVHeader())
	after := ""
	for {
		js, err := d.cfg.Queue.BatchJobs(r.Context(), jobs.BatchJobsParams{AccountID: a.ID, BatchID: b.ID, Limit: 200, After: after})
		if err != nil {
			d.cfg.Logger.ErrorContext(r.Context(), "dashboard: export", "err", err)
			break
		}
		for _, j := range js {
			if filter != "" && (j.Result == nil || string(j.Result.Confidence.Status) != filter) {
				continue
			}
			cw.Write(httpapi.BatchCSVRecord(j))
		}
		if len(js) < 200 {
			break
		}
		after = js[len(js)-1].ID
	}
	cw.Flush()
}

// batchXLSX is [Dashboard.batchCSV] as an .xlsx workbook of one sheet,
// the columns of the API's batch export.
func (d *Dashboard) batchXLSX(w http.ResponseWriter, r *http.Request, a store.Account) {
	b, ok := d.batch(w, r, a)
	if !ok {
		return
	}
	var f httpapi.ExportFilter
	if s := r.URL.Query().Get("status"); s != "" {
		f.Statuses = []emailcheck.Status{emailcheck.Status(s)}
	}
	d.writeXLSX(w, r, a, "batch-"+b.ID+".xlsx", func(start func() httpapi.RecordWriter) error {
		return httpapi.WriteBatch(r.Context(), d.cfg.Queue, a.ID, b.ID, f, start)
	})
}

// writeXLSX sends the records write gives as an .xlsx workbook named
// file, if [Config.Workbooks] admits one more of the account's, at its
// send pace. The workbook's rows are all read before its first byte is
// sent (they spill to a temporary file past a few thousand), so that a
// store failure is a page saying so rather than a truncated file.
func (d *Dashboard) writeXLSX(w http.ResponseWriter, r *http.Request, a store.Account, file string, write func(start func() httpapi.RecordWriter) error) {
	leave, ok := d.cfg.Workbooks.Enter(r.Context(), a.ID)
	if !ok {
		w.Header().Set("Retry-After", "5")
		d.fail(w, r, http.StatusTooManyRequests, "Other .xlsx files are being made for your account or on this server. Try again in a few seconds, or download the CSV, which is not limited.")
		return
	}
	defer leave()
	sw, err := httpapi.NewSheetWriter("Results")
	if err != nil {
		d.backendError(w, r, "xlsx export", err)
		return
	}
	defer sw.Close()
	if err := write(func() httpapi.RecordWriter { return sw }); err != nil {
		d.backendError(w, r, "xlsx export", err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", httpapi.XLSXContentType)
	h.Set("Content-Disposition", `attachment; filename="`+file+`"`)
	h.Set("Cache-Control", "no-store")
	if _, err := d.cfg.Workbooks.Send(w, sw); err != nil {
		d.cfg.Logger.ErrorContext(r.Context(), "dashboard: xlsx export", "err", err)
	}
}
