package httpapi_test

import (
	"bytes"
	"encoding/csv"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/validmail/validmail/httpapi"
	"github.com/validmail/validmail/store"
)

// TestListErrors sends lists the API refuses: each is a 4xx problem with
// its code, and none charges anything or leaves a batch.
func TestListErrors(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	tests := []struct {
		name, ctype, target, body string
		status                    int
		code                      string
	}{
		{"no column", "text/csv", "/api/v1/lists", "a,b\nc,d\n", 400, "no_email_column"},
		{"unknown column", "text/csv", "/api/v1/lists?column=work", "email\na@good.com\n", 400, "no_email_column"},
		{"NUL", "text/csv", "/api/v1/lists", "email\na@go\x00od.com\n", 400, "invalid_list"},
		{"UTF-16 of no address", "text/plain", "/api/v1/lists", "\xff\xfea\x00@\x00", 400, "empty_batch"},
		{"open quote", "text/csv", "/api/v1/lists", "email\n\"a@good.com\n", 400, "invalid_list"},
		{"no address", "text/csv", "/api/v1/lists", "email\nnot an address\n", 400, "empty_batch"},
		{"empty", "text/csv", "/api/v1/lists", "\n", 400, "empty_batch"},
		{"JSON", "application/json", "/api/v1/lists", `{"emails":["a@good.com"]}`, 415, "unsupported_media_type"},
		{"multipart without file", "multipart/form-data; boundary=XX", "/api/v1/lists", "--XX\r\nContent-Disposition: form-data; name=\"other\"\r\n\r\nx\r\n--XX--\r\n", 400, "invalid_body"},
		{"control character in name", "text/csv", "/api/v1/lists?name=a%01b", "email\na@good.com\n", 400, "invalid_body"},
		{"beyond the balance", "text/plain", "/api/v1/lists", strings.Repeat("x", 0) + manyAddresses(301), 402, "insufficient_credits"},
	}
	for _, tc := range tests {
		resp := f.do(t, req{method: "POST", target: tc.target, key: f.key, body: tc.body, header: map[string]string{"Content-Type": tc.ctype}})
		if resp.Code != tc.status || !strings.Contains(string(resp.Body), `"code":"`+tc.code+`"`) {
			t.Errorf("%s: %d %s; want %d %s", tc.name, resp.Code, resp.Body, tc.status, tc.code)
		}
	}
	if bal, _ := f.ledger.Balance(t.Context(), f.acct.ID); bal != 300 {
		t.Fatalf("balance %d after refused lists; want 300", bal)
	}
	resp := f.do(t, req{method: "GET", target: "/api/v1/batches", key: f.key})
	if strings.Contains(string(resp.Body), `"batch_id"`) {
		t.Fatalf("batches after refused lists: %s", resp.Body)
	}
}

func manyAddresses(n int) string {
	var sb strings.Builder
	for i := range n {
		sb.WriteString("user")
		sb.WriteString(strings.Repeat("x", i%5))
		sb.WriteString(string(rune('a' + i%26)))
		sb.WriteString(strings.Repeat("y", i/26))
		sb.WriteString("@good.com\n")
	}
	return sb.String()
}

// TestListMultipart uploads a file as a browser's form does: the batch is
// named after the file, and its CSV keeps the file's columns and order.
func TestListMultipart(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	mw.WriteField("note", "ignored")
	fw, _ := mw.CreateFormFile("file", `C:\Users\jane\customers.csv`)
	fw.Write([]byte("id;Mail;city\n1;b@good.com;Paris\n2;junk;Rome\n3;A@good.com;Oslo\n4; B@GOOD.com ;Bern\n"))
	mw.Close()
	resp := f.do(t, req{method: "POST", target: "/api/v1/lists", key: f.key, body: body.String(), header: map[string]string{"Content-Type": mw.FormDataContentType()}})
	if resp.Code != 202 {
		t.Fatalf("POST: %d %s", resp.Code, resp.Body)
	}
	m := resp.JSON(t)
	if m["name"] != "customers.csv" || m["rows"] != 4.0 || m["addresses"] != 2.0 || m["duplicates"] != 1.0 || m["invalid_rows"] != 1.0 || m["charged"] != 2.0 {
		t.Fatalf("answer %s", resp.Body)
	}
	id := m["batch_id"].(string)
	f.runPool(t)
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := f.do(t, req{method: "GET", target: "/api/v1/batches/" + id, key: f.key})
		if strings.Contains(string(r.Body), `"state":"completed"`) {
			if !strings.Contains(string(r.Body), `"name":"customers.csv"`) || !strings.Contains(string(r.Body), `"total":2`) {
				t.Fatalf("batch %s", r.Body)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("batch not completed: %s", r.Body)
		}
		time.Sleep(10 * time.Millisecond)
	}
	r := f.do(t, req{method: "GET", target: "/api/v1/batches/" + id + "/results?format=csv", key: f.key})
	lines := strings.Split(strings.TrimSpace(string(r.Body)), "\n")
	if len(lines) != 5 || !strings.HasPrefix(lines[0], "id,Mail,city,status,score,reason,did_you_mean,is_disposable,is_role_based,is_free,provider") ||
		!strings.HasPrefix(lines[1], "1,b@good.com,Paris,") || !strings.HasPrefix(lines[2], "2,junk,Rome,INVALID_FORMAT,0,invalid_syntax") ||
		!strings.HasPrefix(lines[4], `4," B@GOOD.com ",Bern,`) {
		t.Fatalf("export:\n%s", r.Body)
	}
	if strings.Split(lines[1], ",")[3] != strings.Split(lines[4], ",")[3] {
		t.Fatalf("rows of one address differ:\n%s", r.Body)
	}
	r = f.do(t, req{method: "GET", target: "/api/v1/batches/" + id + "/results?format=csv&group=remove", key: f.key})
	if got := strings.Count(string(r.Body), "\n"); got != 2 || !strings.Contains(string(r.Body), "junk") {
		t.Fatalf("group=remove:\n%s", r.Body)
	}
	r = f.do(t, req{method: "GET", target: "/api/v1/batches/" + id + "/results?group=sideways", key: f.key})
	if r.Code != 400 {
		t.Fatalf("group=sideways: %d", r.Code)
	}
	// /validate/async keeps its 1,000 limit.
	emails := strings.Repeat(`"a@good.com",`, 1001)
	r = f.do(t, req{method: "POST", target: "/validate/async", key: f.key, body: `{"emails":[` + emails[:len(emails)-1] + `]}`})
	if r.Code != 400 || !strings.Contains(string(r.Body), "batch_too_large") {
		t.Fatalf("1,001 addresses to /validate/async: %d %s", r.Code, r.Body)
	}
}

// TestListExportEscapesFormulas reads back a list whose cells a
// spreadsheet would run as formulas: every uploaded cell (and header)
// starting with =, +, -, @, a tab or a carriage return comes back with a
// leading apostrophe, as in a batch's export; the rest is unchanged.
func TestListExportEscapesFormulas(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	body := "email,=note,plain\n" +
		"a@good.com,=HYPERLINK(\"http://evil.example\"),ok\n" +
		"b@good.com,+1,-2\n" +
		"c@good.com,@SUM(A1),\"\tx\"\n" +
		"=1+1,\"\rcr\",x-y\n"
	resp := f.do(t, req{method: "POST", target: "/api/v1/lists", key: f.key, body: body, header: map[string]string{"Content-Type": "text/csv"}})
	if resp.Code != 202 {
		t.Fatalf("POST: %d %s", resp.Code, resp.Body)
	}
	id := resp.JSON(t)["batch_id"].(string)
	r := f.do(t, req{method: "GET", target: "/api/v1/batches/" + id + "/results?format=csv", key: f.key})
	recs, err := csv.NewReader(bytes.NewReader(r.Body)).ReadAll()
	if err != nil || len(recs) != 5 {
		t.Fatalf("export: %v\n%s", err, r.Body)
	}
	want := [][]string{
		{"email", "'=note", "plain"},
		{"a@good.com", `'=HYPERLINK("http://evil.example")`, "ok"},
		{"b@good.com", "'+1", "'-2"},
		{"c@good.com", "'@SUM(A1)", "'\tx"},
		{"'=1+1", "'\rcr", "x-y"},
	}
	for i, w := range want {
		if got := recs[i][:3]; !slices.Equal(got, w) {
			t.Errorf("row %d: %q, want %q", i, got, w)
		}
	}
}

// heldUpload is a list upload served by the handler whose body stays
// open until finish: it holds an upload slot meanwhile.
type heldUpload struct {
	pw   *io.PipeWriter
	done chan *httptest.ResponseRecorder
}

// holdUpload starts an upload and returns once the handler has read its
// first bytes, so that it holds its slot.
func holdUpload(t *testing.T, h http.Handler, key string) *heldUpload {
	t.Helper()
	pr, pw := io.Pipe()
	r := httptest.NewRequest("POST", "/api/v1/lists", pr)
	r.Header.Set("x-api-key", key)
	r.Header.Set("Content-Type", "text/csv")
	u := &heldUpload{pw: pw, done: make(chan *httptest.ResponseRecorder, 1)}
	go func() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		pr.CloseWithError(io.ErrClosedPipe) // unblocks a writer if the handler refused
		u.done <- rec
	}()
	// A write to the pipe returns when the handler reads it.
	if _, err := io.WriteString(pw, "email\n"); err != nil {
		t.Fatalf("the handler did not read the upload: %v", err)
	}
	return u
}

// finish ends the upload's body and returns the handler's answer.
func (u *heldUpload) finish(t *testing.T) *httptest.ResponseRecorder {
	t.Helper()
	io.WriteString(u.pw, "held@good.com\n")
	u.pw.Close()
	return <-u.done
}

// TestListUploadsPerAccount holds uploads open: one account gets at most
// MaxListUploadsPerAccount of the handler's slots, and the others'
// uploads still go through until every slot is taken.
func TestListUploadsPerAccount(t *testing.T) {
	t.Parallel()
	f := setup(t, &options{configure: func(c *httpapi.Config) { c.MaxListUploads = 4 }})
	_, other := f.newAccount(t, "other@good.com", 300, store.AllPermissions())
	_, third := f.newAccount(t, "third@good.com", 300, store.AllPermissions())
	var held []*heldUpload
	for range httpapi.MaxListUploadsPerAccount {
		held = append(held, holdUpload(t, f.checked, f.key))
	}
	list := map[string]string{"Content-Type": "text/csv"}
	resp := f.do(t, req{method: "POST", target: "/api/v1/lists", key: f.key, body: "email\na@good.com\n", header: list})
	if resp.Code != 429 || !strings.Contains(string(resp.Body), "This account is uploading") || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("a third upload of one account: %d %s", resp.Code, resp.Body)
	}
	if resp := f.do(t, req{method: "POST", target: "/api/v1/lists", key: other, body: "email\nb@good.com\n", header: list}); resp.Code != 202 {
		t.Fatalf("another account's upload: %d %s", resp.Code, resp.Body)
	}
	// Fill the instance's slots: 2 of the owner's, 2 of the others'.
	for _, k := range []string{other, third} {
		held = append(held, holdUpload(t, f.checked, k))
	}
	resp = f.do(t, req{method: "POST", target: "/api/v1/lists", key: third, body: "email\nc@good.com\n", header: list})
	if resp.Code != 429 || !strings.Contains(string(resp.Body), "Too many lists") {
		t.Fatalf("an upload with every slot taken: %d %s", resp.Code, resp.Body)
	}
	for _, u := range held {
		if rec := u.finish(t); rec.Code != 202 {
			t.Fatalf("a held upload: %d %s", rec.Code, rec.Body)
		}
	}
	if resp := f.do(t, req{method: "POST", target: "/api/v1/lists", key: f.key, body: "email\nd@good.com\n", header: list}); resp.Code != 202 {
		t.Fatalf("the owner's upload after the others ended: %d %s", resp.Code, resp.Body)
	}
}
