package dashboard_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xuri/excelize/v2"

	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/httpapi"
	"github.com/validmail/validmail/httpapi/dashboard"
	"github.com/validmail/validmail/jobs/lists"
	"github.com/validmail/validmail/store/backend"
	"github.com/validmail/validmail/store/memstore"
)

// upload sends the list tool's form: a name and a file, as a browser
// sends them.
func (u *user) upload(name, filename, content string) answer {
	u.t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	mw.WriteField("name", name)
	fw, _ := mw.CreateFormFile("file", filename)
	fw.Write([]byte(content))
	mw.Close()
	req, _ := http.NewRequest("POST", u.base+"/dashboard/bulk/list", &body)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	resp, err := u.c.Do(req)
	if err != nil {
		u.t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	b.ReadFrom(resp.Body)
	return answer{resp.StatusCode, resp.Header, b.String()}
}

// preview uploads a list and follows the redirect to its preview.
func (u *user) preview(name, filename, content string) (string, answer) {
	u.t.Helper()
	a := u.upload(name, filename, content)
	loc := a.hdr.Get("Location")
	if a.code != http.StatusSeeOther || !strings.HasPrefix(loc, "/dashboard/bulk/list/") {
		u.t.Fatalf("upload: %d %s\n%s", a.code, loc, a.body)
	}
	return loc, u.do("GET", loc, nil)
}

var (
	idText   = func(id string) *regexp.Regexp { return regexp.MustCompile(`id="` + id + `">([^<]*)<`) }
	addrHead = regexp.MustCompile(`<th scope="col" class="addr">([^<]*?) <span`)
)

// field returns the text of the element of id on a page.
func field(t *testing.T, page, id string) string {
	t.Helper()
	m := idText(id).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no #%s on the page:\n%s", id, page)
	}
	return m[1]
}

var confirmCredits = regexp.MustCompile(`<input type="hidden" name="credits" value="([0-9]+)">`)

// confirmForm is the confirmation form of a preview page: the credits
// the preview showed.
func confirmForm(t *testing.T, page string) url.Values {
	t.Helper()
	m := confirmCredits.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no confirmation form on the preview:\n%s", page)
	}
	return url.Values{"credits": {m[1]}}
}

// customers is a list of 8 unique addresses (two of missing-domain.com),
// 2 duplicates and a row without an address, in columns of its own.
const customers = "name;Mail;city\n" +
	"Ann;ann@good.com;Paris\n" +
	"Bob;bob@good.com;Rome\n" +
	"Cid;cid@good.com;Oslo\n" +
	"Dee;dee@good.com;Bern\n" +
	"Eve;eve@good.com;Riga\n" +
	"Fay;fay@good.com;Kyiv\n" +
	"Gus;gus@missing-domain.com;Lima\n" +
	"Hal;hal@missing-domain.com;Nice\n" +
	"Ann again; ANN@good.com ;Paris\n" +
	"Bob again;bob@good.com;Rome\n" +
	"Nobody;n/a;=cmd\n"

// TestListTool uploads a list on the bulk page on every backend: its
// preview finds the address column, counts its rows and costs it (the
// free allowance first, credits for the rest); the confirmation submits
// it once and charges exactly that; a list beyond the balance is refused
// before and at the confirmation; and the batch's grouped downloads hold
// the rows of each group with the uploaded columns.
func TestListTool(t *testing.T) {
	eachBackend(t, func(t *testing.T, open func() *backend.Backend, _ bool) {
		b := open()
		// The console's workbooks, counted in the backend with one at a
		// time per account; the test holds the account's place as
		// another instance would.
		workbooks := func() *httpapi.WorkbookGate {
			return httpapi.NewWorkbookGate(httpapi.WorkbookLimits{Slots: b.AccountSlots, PerAccount: 1})
		}
		s := startSite(t, b, func(dc *dashboard.Config, _ string) { dc.BulkLimit = 5; dc.Workbooks = workbooks() })
		u := newUser(t, s.base)
		u.signup("lister@example.com")

		bulk := u.do("GET", "/dashboard/bulk", nil).body
		if !strings.Contains(bulk, `action="/dashboard/bulk/list"`) || !strings.Contains(bulk, `id="list-file"`) {
			t.Fatalf("the bulk page has no upload form:\n%s", bulk)
		}
		loc, p := u.preview("", "customers.csv", customers)
		if p.code != http.StatusOK {
			t.Fatalf("preview: %d\n%s", p.code, p.body)
		}
		if m := addrHead.FindStringSubmatch(p.body); m == nil || m[1] != "Mail" {
			t.Fatalf("the highlighted column: %v\n%s", m, p.body)
		}
		if !strings.Contains(p.body, `<td class="addr">ann@good.com</td>`) || strings.Count(p.body, "<tr>") != 11 {
			t.Fatalf("the first rows: %s", p.body)
		}
		for id, want := range map[string]string{"rows": "11", "unique": "8", "duplicates": "2", "invalid": "1", "free": "5", "credits": "3", "balance": "300"} {
			if got := field(t, p.body, id); got != want {
				t.Errorf("#%s %q, want %q", id, got, want)
			}
		}
		if !strings.Contains(p.body, "<title>Preview of customers.csv") || !strings.Contains(p.body, `id="confirm"`) {
			t.Fatalf("the preview's title or confirmation:\n%s", p.body)
		}

		// Another user sees nothing of it.
		other := newUser(t, s.base)
		other.signup("other-lister@example.com")
		if a := other.do("GET", loc, nil); a.code != http.StatusNotFound {
			t.Fatalf("another account's preview: %d", a.code)
		}
		if a := other.do("POST", loc, url.Values{}); a.code != http.StatusNotFound {
			t.Fatalf("another account's confirmation: %d", a.code)
		}

		// Confirm: 3 credits, the allowance spent.
		a := u.do("POST", loc, confirmForm(t, p.body))
		batchURL := a.hdr.Get("Location")
		if a.code != http.StatusSeeOther || !strings.HasPrefix(batchURL, "/dashboard/batches/") {
			t.Fatalf("confirm: %d %s\n%s", a.code, batchURL, a.body)
		}
		if a := u.do("POST", loc, confirmForm(t, p.body)); a.code != http.StatusNotFound {
			t.Fatalf("a second confirmation: %d", a.code)
		}
		if got := field(t, u.do("GET", "/dashboard/", nil).body, "balance"); got != "297" {
			t.Fatalf("balance %s after the list, want 297", got)
		}
		if got := field(t, u.do("GET", "/dashboard/bulk", nil).body, "remaining"); got != "0" {
			t.Fatalf("allowance left %s, want 0", got)
		}

		// Beyond the balance: refused at the preview and at the confirmation.
		var big strings.Builder
		big.WriteString("email\n")
		for i := range 400 {
			fmt.Fprintf(&big, "big%d@good.com\n", i)
		}
		loc2, p2 := u.preview("Big one", "big.csv", big.String())
		if p2.code != http.StatusPaymentRequired || field(t, p2.body, "credits") != "400" || field(t, p2.body, "short") != "103 more credits are needed to validate this list." ||
			strings.Contains(p2.body, `id="confirm"`) {
			t.Fatalf("a list beyond the balance: %d\n%s", p2.code, p2.body)
		}
		if a := u.do("POST", loc2, url.Values{"credits": {"400"}}); a.code != http.StatusPaymentRequired {
			t.Fatalf("confirming a list beyond the balance: %d\n%s", a.code, a.body)
		}
		if got := field(t, u.do("GET", "/dashboard/", nil).body, "balance"); got != "297" {
			t.Fatalf("balance %s after a refused list, want 297", got)
		}
		if a := u.do("POST", loc2+"/cancel", url.Values{}); a.code != http.StatusSeeOther {
			t.Fatalf("cancel: %d", a.code)
		}
		if a := u.do("GET", loc2, nil); a.code != http.StatusNotFound {
			t.Fatalf("a cancelled preview: %d", a.code)
		}

		// The batch: its name and number, then its downloads by group.
		page := u.completedPage(t, batchURL)
		if !strings.Contains(page, "<title>customers.csv (batch 1)") || !strings.Contains(page, "?group=safe") {
			t.Fatalf("the batch page:\n%s", page)
		}
		// Rows and unique addresses counted apart; statuses named, with
		// their codes.
		for id, want := range map[string]string{"list-rows": "11", "list-unique": "8", "list-duplicates": "2", "list-junk": "1",
			"size-safe": "8 rows", "size-risky": "0 rows", "size-remove": "3 rows", "size-all": "11 rows"} {
			if got := field(t, page, id); got != want {
				t.Errorf("#%s %q, want %q", id, got, want)
			}
		}
		if !strings.Contains(page, `Likely deliverable <code class="code">LIKELY</code> 6`) || !strings.Contains(page, `Domain does not exist <code class="code">INVALID_DOMAIN</code> 2`) {
			t.Errorf("the counts by status:\n%s", page)
		}
		if list := u.do("GET", "/dashboard/batches", nil).body; !strings.Contains(list, ">customers.csv</a>") || !strings.Contains(list, "No. 1") {
			t.Fatalf("the batches table:\n%s", list)
		}
		get := func(group string) [][]string {
			t.Helper()
			a := u.do("GET", batchURL+"/list.csv"+group, nil)
			recs, err := csv.NewReader(strings.NewReader(a.body)).ReadAll()
			if a.code != http.StatusOK || err != nil || len(recs) == 0 || strings.Join(recs[0][:4], ",") != "name,Mail,city,status" {
				t.Fatalf("download %s: %d %v\n%s", group, a.code, err, a.body)
			}
			return recs[1:]
		}
		names := func(recs [][]string) string {
			var out []string
			for _, r := range recs {
				out = append(out, r[0])
			}
			return strings.Join(out, ",")
		}
		if got := names(get("?group=safe")); got != "Ann,Bob,Cid,Dee,Eve,Fay,Ann again,Bob again" {
			t.Errorf("safe to send: %s", got)
		}
		if got := names(get("?group=risky")); got != "" {
			t.Errorf("risky: %s", got)
		}
		remove := get("?group=remove")
		if got := names(remove); got != "Gus,Hal,Nobody" {
			t.Errorf("remove: %s", got)
		}
		if remove[2][2] != "'=cmd" {
			t.Errorf("a formula cell comes back as %q", remove[2][2])
		}
		if got := len(get("")); got != 11 {
			t.Errorf("all rows: %d", got)
		}
		if got := names(get("?rows=junk")); got != "Nobody" {
			t.Errorf("the rows without an address: %s", got)
		}
		// Each address once: 8 addresses and the row without one; Ann's
		// and Bob's first rows count one duplicate each.
		if !strings.Contains(page, "list.csv?group=safe&amp;dedupe=true") {
			t.Errorf("the batch page offers no download of each address once:\n%s", page)
		}
		unique := get("?dedupe=true")
		if got := names(unique); len(unique) != 9 || got != "Ann,Bob,Cid,Dee,Eve,Fay,Gus,Hal,Nobody" || unique[0][len(unique[0])-1] != "1" || unique[2][len(unique[2])-1] != "0" {
			t.Errorf("each address once: %q", unique)
		}
		if a := other.do("GET", batchURL+"/list.csv?group=safe", nil); a.code != http.StatusNotFound {
			t.Errorf("another account's download: %d", a.code)
		}
		// The same downloads as .xlsx workbooks: the list's and the
		// results'.
		if !strings.Contains(page, "list.xlsx?group=safe") || !strings.Contains(page, `id="results-xlsx"`) {
			t.Errorf("the batch page offers no .xlsx downloads:\n%s", page)
		}
		sheet := func(path string) [][]string {
			t.Helper()
			a := u.do("GET", batchURL+path, nil)
			if a.code != http.StatusOK || !strings.Contains(a.hdr.Get("Content-Disposition"), ".xlsx") {
				t.Fatalf("%s: %d %q", path, a.code, a.hdr.Get("Content-Disposition"))
			}
			wb, err := excelize.OpenReader(strings.NewReader(a.body))
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			defer wb.Close()
			rows, err := wb.GetRows(wb.GetSheetName(0))
			if err != nil {
				t.Fatal(err)
			}
			return rows
		}
		if rows := sheet("/list.xlsx?group=safe"); len(rows) != 9 || strings.Join(rows[0][:4], ",") != "name,Mail,city,status" || names(rows[1:]) != "Ann,Bob,Cid,Dee,Eve,Fay,Ann again,Bob again" {
			t.Errorf("safe to send as .xlsx: %q", rows)
		}
		if rows := sheet("/results.xlsx"); len(rows) != 9 || rows[0][1] != "email" {
			t.Errorf("the results as .xlsx: %q", rows)
		}
		for _, u := range []string{"/list.xlsx", "/list.xlsx?rows=junk", "/results.xlsx", "/results.xlsx?status=LIKELY"} {
			if a := other.do("GET", batchURL+u, nil); a.code != http.StatusNotFound {
				t.Errorf("another account's .xlsx download %s: %d", u, a.code)
			}
		}
		// While another instance makes the account's workbook, one more
		// is refused for a few seconds; the CSV is not.
		acct, err := b.Accounts.GetAccountByEmail(context.Background(), "lister@example.com")
		if err != nil {
			t.Fatal(err)
		}
		leave, ok := workbooks().Enter(context.Background(), acct.ID)
		if !ok {
			t.Fatal("the account's workbook place is taken with none being made")
		}
		if a := u.do("GET", batchURL+"/list.xlsx?group=safe", nil); a.code != http.StatusTooManyRequests || a.hdr.Get("Retry-After") == "" ||
			!strings.Contains(a.body, "Try again in a few seconds") {
			t.Errorf("an .xlsx while another instance makes the account's: %d %q\n%s", a.code, a.hdr.Get("Retry-After"), a.body)
		}
		get("?group=safe")
		leave()
		if rows := sheet("/results.xlsx"); len(rows) != 9 {
			t.Errorf("the results as .xlsx once the other is made: %d rows", len(rows))
		}
	})
}

// TestListToolColumn chooses another address column on the preview: the
// list is read again with it, and counted anew.
func TestListToolColumn(t *testing.T) {
	t.Parallel()
	s := startSite(t, nil)
	u := newUser(t, s.base)
	u.signup("columns@example.com")
	loc, p := u.preview("Two columns", "two.csv", "email,work\na@good.com,w1@good.com\nb@good.com,w2@good.com\na@good.com,w3@good.com\n")
	if m := addrHead.FindStringSubmatch(p.body); m == nil || m[1] != "email" || field(t, p.body, "unique") != "2" {
		t.Fatalf("preview: %v\n%s", m, p.body)
	}
	a := u.do("POST", loc+"/column", url.Values{"column": {"2"}})
	next := a.hdr.Get("Location")
	if a.code != http.StatusSeeOther || next == loc {
		t.Fatalf("choosing a column: %d %s\n%s", a.code, next, a.body)
	}
	p = u.do("GET", next, nil)
	if m := addrHead.FindStringSubmatch(p.body); m == nil || m[1] != "work" || field(t, p.body, "unique") != "3" || !strings.Contains(p.body, "<title>Preview of Two columns") {
		t.Fatalf("after choosing work: %v\n%s", m, p.body)
	}
	if a := u.do("GET", loc, nil); a.code != http.StatusNotFound {
		t.Fatalf("the first reading is still kept: %d", a.code)
	}
	if a := u.do("POST", next+"/column", url.Values{"column": {"9"}}); a.code != http.StatusUnprocessableEntity {
		t.Fatalf("a column out of range: %d", a.code)
	}
	// A file the list reader refuses comes back to the bulk page.
	if a := u.upload("", "bad.csv", "name,city\nAnn,Paris\n"); a.code != http.StatusUnprocessableEntity || !strings.Contains(a.body, "No column of the file holds addresses") {
		t.Fatalf("a file without addresses: %d\n%s", a.code, a.body)
	}
}

// TestListToolCostChanged: a confirmation does not charge more credits
// than its preview showed. The free allowance spent elsewhere after the
// preview makes the confirmation show the preview again with the new
// cost (409), charging nothing; confirming that preview submits the list
// at the cost it shows.
func TestListToolCostChanged(t *testing.T) {
	t.Parallel()
	s := startSite(t, nil, func(dc *dashboard.Config, _ string) { dc.BulkLimit = 5 })
	u := newUser(t, s.base)
	u.signup("costs@example.com")
	loc, p := u.preview("", "customers.csv", customers)
	if field(t, p.body, "free") != "5" || field(t, p.body, "credits") != "3" {
		t.Fatalf("preview:\n%s", p.body)
	}
	// The allowance goes to addresses pasted on the bulk page.
	if a := u.do("POST", "/dashboard/bulk", url.Values{"emails": {"p1@good.com\np2@good.com\np3@good.com\np4@good.com\np5@good.com"}}); a.code != http.StatusSeeOther {
		t.Fatalf("pasted addresses: %d\n%s", a.code, a.body)
	}
	balance := field(t, u.do("GET", "/dashboard/", nil).body, "balance")
	a := u.do("POST", loc, confirmForm(t, p.body))
	if a.code != http.StatusConflict || field(t, a.body, "free") != "0" || field(t, a.body, "credits") != "8" ||
		!strings.Contains(a.body, "now needs 8 credits instead of 3") {
		t.Fatalf("a confirmation costing more than its preview: %d\n%s", a.code, a.body)
	}
	if got := field(t, u.do("GET", "/dashboard/", nil).body, "balance"); got != balance {
		t.Fatalf("balance %s after a refused confirmation, want %s", got, balance)
	}
	// Without the preview's cost, a list that costs credits is not
	// submitted either.
	if a := u.do("POST", loc, url.Values{}); a.code != http.StatusConflict {
		t.Fatalf("a confirmation without the preview's cost: %d\n%s", a.code, a.body)
	}
	a = u.do("POST", loc, confirmForm(t, a.body))
	if a.code != http.StatusSeeOther || !strings.HasPrefix(a.hdr.Get("Location"), "/dashboard/batches/") {
		t.Fatalf("confirming the new cost: %d\n%s", a.code, a.body)
	}
	want, _ := strconv.Atoi(balance)
	if got := field(t, u.do("GET", "/dashboard/", nil).body, "balance"); got != strconv.Itoa(want-8) {
		t.Fatalf("balance %s after the list, want %d", got, want-8)
	}
}

// TestListToolColumnConcurrent: a column change reads the list again in
// an upload slot, with the pending list out of the table meanwhile.
// Changes sent at once read it once: the others find no list (404),
// and one list is kept. With the account's slots taken, a change is
// refused (429) and the list stays as it was.
func TestListToolColumnConcurrent(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	b := memstore.NewBackend()
	d, err := dashboard.New(dashboard.Storage{Accounts: b.Accounts, Passwords: b.Passwords, Sessions: b.Sessions, Tokens: b.Tokens},
		credits.New(b.Credits, nil), mustQueue(t, b), &dashboard.Config{InsecureCookies: true, Lists: &lists.Options{TempDir: tmp}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(d.Handler())
	defer srv.Close()
	// Pending lists leave nothing in the temporary directory: their files
	// are unlinked as soon as they are created.
	defer func() {
		if ents, err := os.ReadDir(tmp); err != nil || len(ents) != 0 {
			t.Errorf("the temporary directory holds %v (%v)", ents, err)
		}
	}()
	u := newUser(t, srv.URL)
	u.signup("concurrent@example.com")
	acct, err := b.Accounts.GetAccountByEmail(context.Background(), "concurrent@example.com")
	if err != nil {
		t.Fatal(err)
	}
	loc, _ := u.preview("Two columns", "two.csv", "email,work\na@good.com,w1@good.com\nb@good.com,w2@good.com\n")

	// Every slot of the account taken: refused, the list kept.
	r1, r2 := dashboard.TakeListSlot(d, acct.ID), dashboard.TakeListSlot(d, acct.ID)
	if r1 == nil || r2 == nil {
		t.Fatal("the account's slots are not free")
	}
	if a := u.do("POST", loc+"/column", url.Values{"column": {"2"}}); a.code != http.StatusTooManyRequests || a.hdr.Get("Retry-After") == "" {
		t.Fatalf("a column change without a slot: %d\n%s", a.code, a.body)
	}
	if a := u.do("GET", loc, nil); a.code != http.StatusOK {
		t.Fatalf("the list after a refused change: %d", a.code)
	}
	r1()
	r2()

	// The first change is held while it reads; the others answer meanwhile.
	reading, resume := make(chan struct{}), make(chan struct{})
	var once sync.Once
	dashboard.HoldRespool(d, func() {
		once.Do(func() { close(reading) })
		<-resume
	})
	first := make(chan answer, 1)
	go func() { first <- u.do("POST", loc+"/column", url.Values{"column": {"2"}}) }()
	<-reading
	if a := u.do("GET", loc, nil); a.code != http.StatusNotFound {
		t.Fatalf("the list while it is read again: %d, want 404", a.code)
	}
	codes := make(chan int, 5)
	var wg sync.WaitGroup
	for range 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes <- u.do("POST", loc+"/column", url.Values{"column": {"2"}}).code
		}()
	}
	wg.Wait()
	close(codes)
	for c := range codes {
		if c != http.StatusNotFound {
			t.Errorf("a change during the reading: %d, want 404", c)
		}
	}
	if a := u.do("POST", loc, url.Values{}); a.code != http.StatusNotFound {
		t.Errorf("a confirmation during the reading: %d, want 404", a.code)
	}
	close(resume)
	a := <-first
	next := a.hdr.Get("Location")
	if a.code != http.StatusSeeOther || next == loc {
		t.Fatalf("the first change: %d %s\n%s", a.code, next, a.body)
	}
	if a := u.do("GET", loc, nil); a.code != http.StatusNotFound {
		t.Fatalf("the list read again is still waiting under its old link: %d", a.code)
	}
	// Its slot is given back: the account holds none.
	r1, r2 = dashboard.TakeListSlot(d, acct.ID), dashboard.TakeListSlot(d, acct.ID)
	if r1 == nil || r2 == nil {
		t.Fatal("a column change kept its upload slot")
	}
	r1()
	r2()
	if p := u.do("GET", next, nil); p.code != http.StatusOK || field(t, p.body, "unique") != "2" {
		t.Fatalf("the list read with the new column: %d\n%s", p.code, p.body)
	}
}

// TestListToolExcelCSV uploads a file as Excel's "CSV (Comma delimited)"
// saves it (Windows-1252): the preview reads it, says so, and shows its
// names as they were written.
func TestListToolExcelCSV(t *testing.T) {
	t.Parallel()
	s := startSite(t, nil)
	u := newUser(t, s.base)
	u.signup("excel@example.com")
	_, p := u.preview("", "contacts.csv", "Name,Email\r\nJos\xe9 M\xfcller,jose@good.com\r\nZo\xeb,zoe@good.com\r\n")
	if p.code != http.StatusOK {
		t.Fatalf("preview: %d\n%s", p.code, p.body)
	}
	if got := field(t, p.body, "encoding"); got != "The file was read as Windows-1252 text." {
		t.Errorf("#encoding %q", got)
	}
	if !strings.Contains(p.body, "<td>José Müller</td>") || !strings.Contains(p.body, "<td>Zoë</td>") || field(t, p.body, "unique") != "2" {
		t.Fatalf("the preview's rows:\n%s", p.body)
	}
}

// TestBatchDelete deletes a list from its page on every backend: a
// confirmation first, then the batch, its page and its downloads are 404;
// another account cannot delete it.
func TestBatchDelete(t *testing.T) {
	eachBackend(t, func(t *testing.T, open func() *backend.Backend, _ bool) {
		s := startSite(t, open())
		u := newUser(t, s.base)
		u.signup("deleter@example.com")
		loc, p := u.preview("", "customers.csv", customers)
		a := u.do("POST", loc, confirmForm(t, p.body))
		batchURL := a.hdr.Get("Location")
		if a.code != http.StatusSeeOther || !strings.HasPrefix(batchURL, "/dashboard/batches/") {
			t.Fatalf("confirm: %d %s", a.code, batchURL)
		}
		page := u.do("GET", batchURL, nil).body
		if !strings.Contains(page, `id="delete-batch" href="`+batchURL+`/delete"`) {
			t.Fatalf("the batch page offers no deletion:\n%s", page)
		}
		confirm := u.do("GET", batchURL+"/delete", nil)
		if confirm.code != http.StatusOK || !strings.Contains(confirm.body, "11 uploaded rows") || !strings.Contains(confirm.body, `action="`+batchURL+`/delete"`) {
			t.Fatalf("the confirmation: %d\n%s", confirm.code, confirm.body)
		}
		other := newUser(t, s.base)
		other.signup("other-deleter@example.com")
		if a := other.do("POST", batchURL+"/delete", url.Values{}); a.code != http.StatusNotFound {
			t.Fatalf("another account's delete: %d", a.code)
		}
		if a := u.do("POST", batchURL+"/delete", url.Values{}); a.code != http.StatusSeeOther || a.hdr.Get("Location") != "/dashboard/batches" {
			t.Fatalf("delete: %d %s", a.code, a.hdr.Get("Location"))
		}
		if list := u.do("GET", "/dashboard/batches", nil).body; !strings.Contains(list, "is deleted") || strings.Contains(list, ">customers.csv</a>") {
			t.Fatalf("the batches after the delete:\n%s", list)
		}
		for _, path := range []string{"", "/list.csv", "/list.csv?group=safe&dedupe=true", "/results.csv", "/delete"} {
			if a := u.do("GET", batchURL+path, nil); a.code != http.StatusNotFound {
				t.Errorf("GET %s after the delete: %d", batchURL+path, a.code)
			}
		}
	})
}

// TestListToolXLSX uploads a workbook: its first sheet is previewed as a
// CSV file would be.
func TestListToolXLSX(t *testing.T) {
	t.Parallel()
	s := startSite(t, nil)
	u := newUser(t, s.base)
	u.signup("workbook@example.com")
	book := excelize.NewFile()
	for i, row := range [][]any{{"Name", "Email"}, {"Zoë", "zoe@good.com"}, {"Ann", "ann@good.com"}, {"Nobody", "n/a"}} {
		book.SetSheetRow("Sheet1", fmt.Sprintf("A%d", i+1), &row)
	}
	var b bytes.Buffer
	if _, err := book.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	_, p := u.preview("", "contacts.xlsx", b.String())
	if p.code != http.StatusOK || field(t, p.body, "rows") != "3" || field(t, p.body, "unique") != "2" || !strings.Contains(p.body, "<td>Zoë</td>") {
		t.Fatalf("preview: %d\n%s", p.code, p.body)
	}
	if a := u.upload("", "broken.xlsx", "not a workbook"); a.code != http.StatusUnprocessableEntity || !strings.Contains(a.body, "The workbook cannot be read") {
		t.Fatalf("a broken workbook: %d\n%s", a.code, a.body)
	}
}

// TestListToolLargeListSizes: the groups of a list beyond ListCountRows
// are counted in the background: the batch page says so at first, then
// shows each group's rows, as for a small list.
func TestListToolLargeListSizes(t *testing.T) {
	s := startSite(t, nil, func(dc *dashboard.Config, _ string) { dc.BulkLimit = 20; dc.ListCountRows = 5 })
	u := newUser(t, s.base)
	u.signup("large-lister@example.com")
	loc, p := u.preview("", "customers.csv", customers)
	a := u.do("POST", loc, confirmForm(t, p.body))
	batchURL := a.hdr.Get("Location")
	if a.code != http.StatusSeeOther {
		t.Fatalf("confirm: %d\n%s", a.code, a.body)
	}
	page := u.completedPage(t, batchURL)
	if !strings.Contains(page, `id="sizes-counting"`) || strings.Contains(page, `id="size-safe"`) {
		t.Fatalf("the first view of a large list's page:\n%s", page)
	}
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(page, `id="size-safe"`) {
		if time.Now().After(deadline) {
			t.Fatalf("the groups are not counted after a minute:\n%s", page)
		}
		time.Sleep(20 * time.Millisecond)
		page = u.do("GET", batchURL, nil).body
	}
	for id, want := range map[string]string{"size-safe": "8 rows", "size-risky": "0 rows", "size-remove": "3 rows", "size-all": "11 rows"} {
		if got := field(t, page, id); got != want {
			t.Errorf("#%s %q, want %q", id, got, want)
		}
	}
	if strings.Contains(page, `id="sizes-counting"`) {
		t.Errorf("the page still says the groups are being counted")
	}
}

// TestBatchPagePager pages a batch of 150 addresses 100 at a time: the
// first page says so and links the next, which holds the other 50 and
// no further link; the status filter keeps to its pages.
func TestBatchPagePager(t *testing.T) {
	s := startSite(t, nil)
	u := newUser(t, s.base)
	u.signup("pager@example.com")
	var list strings.Builder
	for i := range 150 {
		fmt.Fprintf(&list, "p%03d@good.com\n", i)
	}
	a := u.do("POST", "/dashboard/bulk", url.Values{"emails": {list.String()}})
	batchURL := strings.TrimPrefix(a.hdr.Get("Location"), s.base)
	if a.code != http.StatusSeeOther {
		t.Fatalf("bulk: %d %s", a.code, a.body)
	}
	page := u.completedPage(t, batchURL)
	next := regexp.MustCompile(`<a href="([^"]*\?after=[0-9]+)">Next results</a>`)
	m := next.FindStringSubmatch(page)
	if m == nil || strings.Count(page, "@good.com</td>") != 100 || !strings.Contains(page, "150 in all, 100 a page") {
		t.Fatalf("the first page:\n%s", page)
	}
	second := u.do("GET", strings.ReplaceAll(m[1], "&amp;", "&"), nil).body
	if strings.Count(second, "@good.com</td>") != 50 || next.MatchString(second) || !strings.Contains(second, "p149@good.com") || strings.Contains(second, "p000@good.com") {
		t.Fatalf("the second page:\n%s", second)
	}
	// A batch of exactly a page's results has no next page.
	list.Reset()
	for i := range 100 {
		fmt.Fprintf(&list, "q%03d@good.com\n", i)
	}
	a = u.do("POST", "/dashboard/bulk", url.Values{"emails": {list.String()}})
	exact := strings.TrimPrefix(a.hdr.Get("Location"), s.base)
	page = u.completedPage(t, exact)
	if strings.Count(page, "@good.com</td>") != 100 || next.MatchString(page) || !strings.Contains(page, "100 in all, all shown") {
		t.Fatalf("a batch of exactly 100:\n%s", page)
	}
}

// completedPage returns the batch page at path once it says the batch
// completed, polling for up to a minute.
func (u *user) completedPage(t *testing.T, path string) string {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		page := u.do("GET", path, nil).body
		if strings.Contains(page, `<span id="state">completed</span>`) {
			return page
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not completed after a minute:\n%s", path, page)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
