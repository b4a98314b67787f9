package service_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xuri/excelize/v2"

	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/httpapi"
	"github.com/validmail/validmail/httpapi/service"
	"github.com/validmail/validmail/jobs"
	"github.com/validmail/validmail/webhook"
)

// served is a service on a backend, served on loopback, with an account's
// key.
type served struct {
	t    *testing.T
	base string
	key  string
}

// serve starts a service on a fresh namespace of tg with an account of
// credits credits.
func serve(t *testing.T, tg listTarget, credits int64) *served {
	t.Helper()
	return serveWith(t, tg, credits, instant{})
}

// serveWith is serve with a validator of its own.
func serveWith(t *testing.T, tg listTarget, credits int64, v jobs.Validator) *served {
	t.Helper()
	return serveConfig(t, tg, credits, &service.Config{Validator: v, Workers: 4})
}

// serveConfig is serve with a configuration of its own.
func serveConfig(t *testing.T, tg listTarget, credits int64, cfg *service.Config) *served {
	t.Helper()
	ctx := context.Background()
	be := openTarget(t, tg)
	svc, err := service.New(be, cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, key, err := service.Bootstrap(ctx, be.Accounts, service.BootstrapParams{Email: "files@example.org", Credits: credits})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- svc.Serve(sctx, ln) }()
	t.Cleanup(func() { stop(); <-done })
	return &served{t: t, base: "http://" + ln.Addr().String(), key: key}
}

// do sends a request with the account's key and returns the status and
// body.
func (s *served) do(method, target, ctype string, body io.Reader) (int, []byte) {
	s.t.Helper()
	req, err := http.NewRequest(method, s.base+target, body)
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("x-api-key", s.key)
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		s.t.Fatal(err)
	}
	return resp.StatusCode, b
}

// upload posts a list and returns its batch's id.
func (s *served) upload(target, ctype string, body io.Reader) string {
	s.t.Helper()
	code, b := s.do("POST", target, ctype, body)
	if code != http.StatusAccepted {
		s.t.Fatalf("POST %s: %d %s", target, code, b)
	}
	var got struct {
		BatchID string `json:"batch_id"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		s.t.Fatal(err)
	}
	return got.BatchID
}

// wait polls a batch until it is completed.
func (s *served) wait(batchID string) {
	s.t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		code, b := s.do("GET", "/api/v1/batches/"+batchID, "", nil)
		var bt struct {
			State string `json:"state"`
		}
		json.Unmarshal(b, &bt)
		if code == http.StatusOK && bt.State == "completed" {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("batch %s not completed: %d %s", batchID, code, b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// csvOf reads a CSV body.
func csvOf(t *testing.T, b []byte) [][]string {
	t.Helper()
	recs, err := csv.NewReader(strings.NewReader(string(b))).ReadAll()
	if err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	return recs
}

// TestListEncodings uploads a contact export as Excel's "CSV (Comma
// delimited)" writes it (Windows-1252, CRLF), and as UTF-16 with a byte
// order mark, on every backend: each is accepted and exported in UTF-8.
func TestListEncodings(t *testing.T) {
	// "Müller", "José", "€" and "Zoë" in Windows-1252.
	excel := "First name,Last name,Email,Company\r\n" +
		"Jos\xe9,M\xfcller,jose.muller@example.org,Caf\xe9 \x80uro\r\n" +
		"Zo\xeb,Smith,zoe@example.org,ACME\r\n" +
		"Ann,Lee,not an address,\r\n"
	want := [][]string{
		{"José", "Müller", "jose.muller@example.org", "Café €uro"},
		{"Zoë", "Smith", "zoe@example.org", "ACME"},
		{"Ann", "Lee", "not an address", ""},
	}
	utf16 := "\xff\xfe" + func() string {
		var sb strings.Builder
		for _, r := range "First name,Last name,Email,Company\r\nJosé,Müller,jose.muller@example.org,Café €uro\r\nZoë,Smith,zoe@example.org,ACME\r\nAnn,Lee,not an address,\r\n" {
			sb.WriteByte(byte(r))
			sb.WriteByte(byte(r >> 8))
		}
		return sb.String()
	}()
	for _, tg := range listTargets() {
		t.Run(tg.name, func(t *testing.T) {
			t.Parallel()
			s := serve(t, tg, 100)
			for name, body := range map[string]string{"Windows-1252": excel, "UTF-16": utf16} {
				id := s.upload("/api/v1/lists?name=contacts.csv", "text/csv", strings.NewReader(body))
				s.wait(id)
				code, b := s.do("GET", "/api/v1/batches/"+id+"/results?format=csv", "", nil)
				if code != http.StatusOK {
					t.Fatalf("%s: export %d %s", name, code, b)
				}
				recs := csvOf(t, b)
				if len(recs) != 4 || strings.Join(recs[0][:4], ",") != "First name,Last name,Email,Company" {
					t.Fatalf("%s: export %q", name, recs)
				}
				for i, w := range want {
					if strings.Join(recs[i+1][:4], "|") != strings.Join(w, "|") {
						t.Errorf("%s: row %d %q, want %q", name, i, recs[i+1][:4], w)
					}
				}
				if recs[1][4] != "LIKELY" || recs[3][4] != "INVALID_FORMAT" {
					t.Errorf("%s: statuses %q, %q", name, recs[1][4], recs[3][4])
				}
			}
		})
	}
}

// TestBatchCSVVocabulary: a batch's CSV export names its columns as a
// list's export and the JSON result do, on every backend.
func TestBatchCSVVocabulary(t *testing.T) {
	for _, tg := range listTargets() {
		t.Run(tg.name, func(t *testing.T) {
			t.Parallel()
			s := serve(t, tg, 10)
			code, b := s.do("POST", "/validate/async", "application/json", strings.NewReader(`{"emails":["ann@example.org","bob@example.org"]}`))
			if code != http.StatusAccepted {
				t.Fatalf("POST /validate/async: %d %s", code, b)
			}
			var got struct {
				BatchID string `json:"batch_id"`
			}
			json.Unmarshal(b, &got)
			s.wait(got.BatchID)
			code, b = s.do("GET", "/api/v1/batches/"+got.BatchID+"/results?format=csv", "", nil)
			recs := csvOf(t, b)
			const want = "job_id,email,status,score,reason,did_you_mean,is_disposable,is_role_based,is_free,provider,domain_exists,mx_records,alias,canonical,state"
			if code != http.StatusOK || len(recs) != 3 || strings.Join(recs[0], ",") != want {
				t.Fatalf("export %d %q; want the header %s", code, recs, want)
			}
			if r := recs[1]; r[1] != "ann@example.org" || r[2] != "LIKELY" || r[6] != "false" || r[14] != "completed" {
				t.Fatalf("row %q", r)
			}
		})
	}
}

// suggesting is instant, but suggests a .com for an address at yahoo.co,
// keeping the validated address's local part.
type suggesting struct{ instant }

func (s suggesting) Validate(ctx context.Context, email string, opts ...emailcheck.CallOption) (emailcheck.Result, error) {
	r, err := s.instant.Validate(ctx, email, opts...)
	if local, ok := strings.CutSuffix(email, "@yahoo.co"); ok {
		d := local + "@yahoo.com"
		r.DidYouMean = &d
	}
	return r, err
}

// TestListDedupe uploads 20 addresses each written twice in different
// case on every backend: ?dedupe=true exports 20 rows, each its address's
// first with a duplicate count of 1; the full export keeps every row, and
// a duplicate's did_you_mean keeps its own local part's case. A batch's
// export deduplicates the same way.
func TestListDedupe(t *testing.T) {
	var sb strings.Builder
	sb.WriteString("email,name\r\n")
	for pass := range 2 {
		for i := range 19 {
			addr := fmt.Sprintf("User%d@Example.org", i)
			if pass == 1 {
				addr = strings.ToLower(addr[:len(addr)-4]) + ".ORG"
			}
			fmt.Fprintf(&sb, "%s,pass %d\r\n", addr, pass)
		}
		if pass == 0 {
			sb.WriteString("SANDRA.MOORE@yahoo.co,pass 0\r\nnot an address,junk\r\n")
		} else {
			sb.WriteString("sandra.moore@yahoo.co,pass 1\r\n")
		}
	}
	for _, tg := range listTargets() {
		t.Run(tg.name, func(t *testing.T) {
			t.Parallel()
			s := serveWith(t, tg, 100, suggesting{})
			id := s.upload("/api/v1/lists", "text/csv", strings.NewReader(sb.String()))
			s.wait(id)
			code, b := s.do("GET", "/api/v1/batches/"+id+"/results?format=csv&dedupe=true", "", nil)
			recs := csvOf(t, b)
			if code != http.StatusOK || len(recs) != 22 || recs[0][len(recs[0])-1] != "duplicates" {
				t.Fatalf("deduplicated export: %d, %d records (want 22: the header, 20 addresses, a junk row)\n%s", code, len(recs), b)
			}
			for i, r := range recs[1:] {
				want := "1"
				if r[0] == "not an address" {
					want = "0"
				}
				if r[1] != "pass 0" && r[1] != "junk" || r[len(r)-1] != want {
					t.Errorf("row %d: %q; want the first row, %s duplicates", i, r, want)
				}
			}
			code, b = s.do("GET", "/api/v1/batches/"+id+"/results?format=csv", "", nil)
			recs = csvOf(t, b)
			col := slices.Index(recs[0], "did_you_mean")
			if code != http.StatusOK || len(recs) != 42 || col < 0 || recs[0][len(recs[0])-1] == "duplicates" {
				t.Fatalf("full export: %d, %d records, header %q", code, len(recs), recs[0])
			}
			if got := recs[20][col] + " " + recs[41][col]; got != "SANDRA.MOORE@yahoo.com sandra.moore@yahoo.com" {
				t.Errorf("did_you_mean of the two rows: %s", got)
			}
			if code, b := s.do("GET", "/api/v1/batches/"+id+"/results?dedupe=true", "", nil); code != http.StatusBadRequest {
				t.Errorf("dedupe of a JSON page: %d %s", code, b)
			}

			code, b = s.do("POST", "/validate/async", "application/json", strings.NewReader(`{"emails":["ann@example.org","Ann@Example.org ","bob@example.org"]}`))
			var bt struct {
				BatchID string `json:"batch_id"`
			}
			if json.Unmarshal(b, &bt); code != http.StatusAccepted {
				t.Fatalf("POST /validate/async: %d %s", code, b)
			}
			s.wait(bt.BatchID)
			code, b = s.do("GET", "/api/v1/batches/"+bt.BatchID+"/results?format=csv&dedupe=true", "", nil)
			recs = csvOf(t, b)
			if code != http.StatusOK || len(recs) != 3 || recs[1][1] != "ann@example.org" || recs[1][15] != "1" || recs[2][15] != "0" {
				t.Fatalf("a batch's deduplicated export: %d %q", code, recs)
			}
			code, b = s.do("GET", "/api/v1/batches/"+bt.BatchID+"/results?format=jsonl&dedupe=true", "", nil)
			if code != http.StatusOK || strings.Count(string(b), "\n") != 2 || !strings.Contains(string(b), `"duplicates":1`) {
				t.Fatalf("a batch's deduplicated JSON Lines: %d %s", code, b)
			}
		})
	}
}

// TestDeleteBatch deletes a list and a batch on every backend: 204, then
// 404 batch_not_found for the batch, its results, its exports and its
// jobs, and a second delete; the charge stays.
func TestDeleteBatch(t *testing.T) {
	for _, tg := range listTargets() {
		t.Run(tg.name, func(t *testing.T) {
			t.Parallel()
			s := serve(t, tg, 100)
			list := s.upload("/api/v1/lists?name=gone.csv", "text/csv", strings.NewReader("email,name\nann@example.org,Ann\nbob@example.org,Bob\njunk,J\n"))
			s.wait(list)
			code, b := s.do("POST", "/validate/async", "application/json", strings.NewReader(`{"emails":["cid@example.org","dee@example.org"]}`))
			var bt struct {
				BatchID string   `json:"batch_id"`
				JobIDs  []string `json:"job_ids"`
			}
			if json.Unmarshal(b, &bt); code != http.StatusAccepted {
				t.Fatalf("POST /validate/async: %d %s", code, b)
			}
			s.wait(bt.BatchID)
			if code, b := s.do("DELETE", "/api/v1/batches/"+list, "", nil); code != http.StatusNoContent || len(b) != 0 {
				t.Fatalf("DELETE the list: %d %s", code, b)
			}
			if code, b := s.do("DELETE", "/api/v1/batches/"+bt.BatchID, "", nil); code != http.StatusNoContent {
				t.Fatalf("DELETE the batch: %d %s", code, b)
			}
			for _, id := range []string{list, bt.BatchID} {
				for _, target := range []string{"", "/results", "/results?format=csv", "/results?format=jsonl", "/results?format=csv&dedupe=true&group=safe"} {
					code, b := s.do("GET", "/api/v1/batches/"+id+target, "", nil)
					if code != http.StatusNotFound || !strings.Contains(string(b), `"code":"batch_not_found"`) {
						t.Errorf("GET %s%s after the delete: %d %s", id, target, code, b)
					}
				}
				if code, b := s.do("DELETE", "/api/v1/batches/"+id, "", nil); code != http.StatusNotFound {
					t.Errorf("a second DELETE of %s: %d %s", id, code, b)
				}
			}
			for _, id := range bt.JobIDs {
				if code, b := s.do("GET", "/validate/status/"+id, "", nil); code != http.StatusNotFound {
					t.Errorf("job %s after the delete: %d %s", id, code, b)
				}
			}
			if _, b := s.do("GET", "/api/v1/batches", "", nil); strings.Contains(string(b), `"batch_id"`) {
				t.Errorf("batches after the deletes: %s", b)
			}
			var acct struct {
				Balance int64 `json:"balance"`
			}
			if _, b := s.do("GET", "/api/v1/account", "", nil); json.Unmarshal(b, &acct) != nil || acct.Balance != 96 {
				t.Errorf("balance %d after deleting what cost 4 credits; want 96", acct.Balance)
			}
		})
	}
}

// TestListWebhookDefault uploads a 5,000-row list (10 % duplicates, junk
// rows) on every backend to an account whose webhook keeps the default
// events: one request, its batch.completed. An endpoint naming
// validation.completed gets each address of a list, and a batch
// submitted by /validate/async gets both kinds by default.
func TestListWebhookDefault(t *testing.T) {
	for _, tg := range listTargets() {
		t.Run(tg.name, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			types := map[string]int{}
			recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				var ev struct {
					Type string `json:"type"`
				}
				json.NewDecoder(r.Body).Decode(&ev)
				mu.Lock()
				types[ev.Type]++
				mu.Unlock()
				w.WriteHeader(http.StatusNoContent)
			}))
			defer recv.Close()
			got := func() map[string]int {
				mu.Lock()
				defer mu.Unlock()
				return maps.Clone(types)
			}
			s := serveConfig(t, tg, 10_000, &service.Config{Validator: instant{}, Workers: 4,
				WebhookClient: webhook.ClientOptions{Allow: []string{"127.0.0.1"}}})
			if code, b := s.do("PUT", "/api/v1/webhook", "application/json", strings.NewReader(`{"url":"`+recv.URL+`/hook"}`)); code/100 != 2 {
				t.Fatalf("PUT /api/v1/webhook: %d %s", code, b)
			}
			var sb strings.Builder
			sb.WriteString("email,name\n")
			unique := 0
			for i := range 5000 {
				rec, valid, first := listRow(i)
				if valid && first {
					unique++
				}
				fmt.Fprintf(&sb, "%q,%q\n", rec[0], rec[1])
			}
			id := s.upload("/api/v1/lists", "text/csv", strings.NewReader(sb.String()))
			s.wait(id)
			eventually(t, "the list's batch.completed", func() bool { return got()["batch.completed"] == 1 })
			// The other batch's events go out after the list's, in one
			// outbox: once they are in, nothing of the list is still due.
			code, b := s.do("POST", "/validate/async", "application/json", strings.NewReader(`{"emails":["ann@example.org","bob@example.org"]}`))
			if code != http.StatusAccepted {
				t.Fatalf("POST /validate/async: %d %s", code, b)
			}
			eventually(t, "the batch's events", func() bool { g := got(); return g["batch.completed"] == 2 && g["validation.completed"] == 2 })
			if g := got(); g["validation.completed"] != 2 || len(g) != 2 {
				t.Fatalf("requests %v after a list of %d addresses and a batch of 2: want the list's batch.completed alone", g, unique)
			}

			if code, b := s.do("PUT", "/api/v1/webhook", "application/json", strings.NewReader(`{"events":["validation.completed","batch.completed"]}`)); code/100 != 2 {
				t.Fatalf("PUT events: %d %s", code, b)
			}
			id = s.upload("/api/v1/lists", "text/plain", strings.NewReader("cid@example.org\ndee@example.org\nCID@example.org\n"))
			s.wait(id)
			eventually(t, "a list's addresses when asked for", func() bool { g := got(); return g["batch.completed"] == 3 && g["validation.completed"] == 4 })
		})
	}
}

// eventually polls cond until it holds, failing after a minute.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after a minute", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestListXLSX uploads a workbook of 1,000 rows (a second sheet before
// it is skipped by ?sheet=) on every backend and downloads the results
// as .xlsx: the uploaded columns first, every row in its order, then the
// verdicts.
func TestListXLSX(t *testing.T) {
	const n = 1000
	book := excelize.NewFile()
	book.SetSheetName("Sheet1", "Notes")
	book.SetCellValue("Notes", "A1", "not the list")
	if _, err := book.NewSheet("Contacts"); err != nil {
		t.Fatal(err)
	}
	sw, err := book.NewStreamWriter("Contacts")
	if err != nil {
		t.Fatal(err)
	}
	sw.SetRow("A1", []any{"First name", "Email", "Signed up"})
	for i := range n {
		email := fmt.Sprintf("user%d@example.org", i)
		if i%100 == 99 {
			email = "no address"
		}
		sw.SetRow(fmt.Sprintf("A%d", i+2), []any{fmt.Sprintf("Zoë %d", i), email, fmt.Sprintf("2026-01-%02d", i%28+1)})
	}
	if err := sw.Flush(); err != nil {
		t.Fatal(err)
	}
	var file bytes.Buffer
	if _, err := book.WriteTo(&file); err != nil {
		t.Fatal(err)
	}
	for _, tg := range listTargets() {
		t.Run(tg.name, func(t *testing.T) {
			t.Parallel()
			s := serve(t, tg, 2*n)
			id := s.upload("/api/v1/lists?sheet=contacts&name=contacts.xlsx", httpapi.XLSXContentType, bytes.NewReader(file.Bytes()))
			s.wait(id)
			code, b := s.do("GET", "/api/v1/batches/"+id+"/results?format=xlsx", "", nil)
			if code != http.StatusOK {
				t.Fatalf("xlsx export: %d %.300s", code, b)
			}
			out, err := excelize.OpenReader(bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			defer out.Close()
			rows, err := out.GetRows(out.GetSheetList()[0])
			if err != nil {
				t.Fatal(err)
			}
			if len(rows) != n+1 || strings.Join(rows[0][:5], ",") != "First name,Email,Signed up,status,score" {
				t.Fatalf("%d rows, header %q", len(rows), rows[0])
			}
			for i, r := range rows[1:] {
				want := "LIKELY"
				if i%100 == 99 {
					want = "INVALID_FORMAT"
				}
				if r[0] != fmt.Sprintf("Zoë %d", i) || r[2] != fmt.Sprintf("2026-01-%02d", i%28+1) || r[3] != want {
					t.Fatalf("row %d: %q", i, r)
				}
			}
			if code, b := s.do("POST", "/api/v1/lists", httpapi.XLSXContentType, strings.NewReader("not a workbook")); code != http.StatusBadRequest || !strings.Contains(string(b), "invalid_list") {
				t.Fatalf("not a workbook: %d %s", code, b)
			}
		})
	}
}

// TestListJunkRows downloads a list's rows that are not addresses through
// the API, as CSV and as .xlsx, on every backend: the uploaded columns
// and the verdict INVALID_FORMAT, the addresses left out; a batch of
// addresses has none to give (400), and the parameter is checked.
func TestListJunkRows(t *testing.T) {
	const list = "name,email\r\nAnn,ann@example.org\r\nNobody,not an address\r\nBob,bob@example.org\r\nBlank,\r\n"
	for _, tg := range listTargets() {
		t.Run(tg.name, func(t *testing.T) {
			t.Parallel()
			s := serve(t, tg, 100)
			id := s.upload("/api/v1/lists", "text/csv", strings.NewReader(list))
			s.wait(id)
			code, b := s.do("GET", "/api/v1/batches/"+id+"/results?format=csv&rows=junk", "", nil)
			recs := csvOf(t, b)
			status := slices.Index(recs[0], "status")
			if code != http.StatusOK || len(recs) != 3 || strings.Join(recs[0][:2], ",") != "name,email" || status < 0 {
				t.Fatalf("the rows without an address: %d %q", code, recs)
			}
			for _, r := range recs[1:] {
				if r[0] != "Nobody" && r[0] != "Blank" || r[status] != string(emailcheck.StatusInvalidFormat) {
					t.Errorf("row %q", r)
				}
			}
			code, b = s.do("GET", "/api/v1/batches/"+id+"/results?format=xlsx&rows=junk", "", nil)
			if code != http.StatusOK {
				t.Fatalf("the rows without an address as .xlsx: %d %s", code, b)
			}
			wb, err := excelize.OpenReader(bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			defer wb.Close()
			rows, err := wb.GetRows(wb.GetSheetName(0))
			if err != nil || len(rows) != 3 || rows[1][0] != "Nobody" || rows[2][0] != "Blank" {
				t.Fatalf("the .xlsx rows: %q, %v", rows, err)
			}
			for _, q := range []string{"?rows=junk", "?format=jsonl&rows=junk", "?format=csv&rows=junk&group=remove", "?format=csv&rows=junk&status=LIKELY", "?format=csv&rows=all"} {
				if code, b := s.do("GET", "/api/v1/batches/"+id+"/results"+q, "", nil); code != http.StatusBadRequest || !strings.Contains(string(b), "invalid_body") {
					t.Errorf("%s: %d %s", q, code, b)
				}
			}
			code, b = s.do("POST", "/validate/async", "application/json", strings.NewReader(`{"emails":["ann@example.org"]}`))
			var bt struct {
				BatchID string `json:"batch_id"`
			}
			if json.Unmarshal(b, &bt); code != http.StatusAccepted {
				t.Fatalf("POST /validate/async: %d %s", code, b)
			}
			if code, b := s.do("GET", "/api/v1/batches/"+bt.BatchID+"/results?format=csv&rows=junk", "", nil); code != http.StatusBadRequest {
				t.Errorf("a batch's rows without an address: %d %s", code, b)
			}
			if code, b := s.do("GET", "/api/v1/batches/999999/results?format=csv&rows=junk", "", nil); code != http.StatusNotFound {
				t.Errorf("an unknown batch's rows without an address: %d %s", code, b)
			}
		})
	}
}
