package service_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/validmail/validmail/httpapi/service"
	"github.com/validmail/validmail/store/backend"
	"github.com/validmail/validmail/store/storeurl"
)

// listTarget is a backend the list tests run on.
type listTarget struct{ name, url string }

// listTargets are memory and every backend the environment names.
func listTargets() []listTarget {
	out := []listTarget{{"memory", "memory"}}
	for _, e := range []struct{ name, env string }{
		{"postgres", "VALIDMAIL_TEST_POSTGRES"}, {"redis", "VALIDMAIL_TEST_REDIS"}, {"redis-cluster", "VALIDMAIL_TEST_REDIS_CLUSTER"},
	} {
		if u := os.Getenv(e.env); u != "" {
			out = append(out, listTarget{e.name, u})
		}
	}
	return out
}

// openTarget opens a fresh namespace of tg's backend.
func openTarget(tb testing.TB, tg listTarget) *backend.Backend {
	url := tg.url
	ns := "lists_" + strings.ReplaceAll(uuid.NewString()[:8], "-", "")
	switch tg.name {
	case "postgres":
		url += sep(url) + "schema=" + ns
		tb.Cleanup(func() { dropSchema(tb, tg.url, ns) })
	case "redis", "redis-cluster":
		url += sep(url) + "prefix=" + ns
	}
	be, err := storeurl.Open(context.Background(), url, &storeurl.Options{Workers: 8, Init: true})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { be.Close() })
	return be
}

// listRow returns row i of a generated list of n rows: "email,name,note",
// 1 % junk rows, 10 % duplicates of an earlier address in another case
// and with spaces around it. valid tells whether the row is an address,
// first whether it is its address's first row.
func listRow(i int) (rec []string, valid, first bool) {
	name, note := "Name "+strconv.Itoa(i), "note, \"quoted\" "+strconv.Itoa(i%7)
	switch {
	case i%100 == 99:
		return []string{"not an address " + strconv.Itoa(i), name, note}, false, false
	case i%10 == 5 && i > 10:
		j := i - 7 // an address row (j%10 == 8, j%100 != 99 unless i%100 == 6: never with i%10 == 5)
		return []string{"  USER" + strconv.Itoa(j) + "@Example.ORG ", name, note}, true, false
	}
	return []string{"user" + strconv.Itoa(i) + "@example.org", name, note}, true, true
}

// heapPeak samples the heap in use until stop is called, returning the
// peak.
func heapPeak() (stop func() uint64) {
	var mu sync.Mutex
	var peak uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			mu.Lock()
			peak = max(peak, ms.HeapInuse)
			mu.Unlock()
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	})
	return func() uint64 {
		close(done)
		wg.Wait()
		return peak
	}
}

func heapNow() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// TestListUpload sends a list of 20,000 rows (100,000 with
// VALIDMAIL_HUGE set) with 10 % duplicates and 1 % junk through
// POST /api/v1/lists on memory and every backend the environment names,
// then checks the charge (the unique addresses exactly), the CSV export
// (the uploaded rows in order, then the results), the group downloads,
// and the heap's peak while the list is uploaded, validated and exported.
func TestListUpload(t *testing.T) {
	n := 20_000
	if os.Getenv("VALIDMAIL_HUGE") != "" {
		n = 100_000
	}
	unique, valid := 0, 0
	for i := range n {
		if _, v, f := listRow(i); v {
			valid++
			if f {
				unique++
			}
		}
	}
	for _, tg := range listTargets() {
		t.Run(tg.name, func(t *testing.T) {
			ctx := context.Background()
			be := openTarget(t, tg)
			svc, err := service.New(be, &service.Config{Validator: instant{}, Workers: 16})
			if err != nil {
				t.Fatal(err)
			}
			const spare = 25
			_, key, err := service.Bootstrap(ctx, be.Accounts, service.BootstrapParams{Email: "lists@example.org", Credits: int64(unique + spare)})
			if err != nil {
				t.Fatal(err)
			}
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			sctx, stop := context.WithCancel(ctx)
			served := make(chan error, 1)
			go func() { served <- svc.Serve(sctx, ln) }()
			defer func() { stop(); <-served }()
			base := "http://" + ln.Addr().String()
			do := func(method, target, ctype string, body io.Reader) *http.Response {
				req, err := http.NewRequest(method, base+target, body)
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("x-api-key", key)
				if ctype != "" {
					req.Header.Set("Content-Type", ctype)
				}
				resp, err := apiClient(t, svc).Do(req)
				if err != nil {
					t.Fatal(err)
				}
				return resp
			}

			before := heapNow()
			peak := heapPeak()
			// The file is written as it is sent: the test holds no copy.
			pr, pw := io.Pipe()
			go func() {
				cw := csv.NewWriter(pw)
				cw.Write([]string{"email", "name", "note"})
				for i := range n {
					rec, _, _ := listRow(i)
					cw.Write(rec)
				}
				cw.Flush()
				pw.CloseWithError(cw.Error())
			}()
			resp := do("POST", "/api/v1/lists?name=customers.csv", "text/csv", pr)
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusAccepted {
				t.Fatalf("POST /api/v1/lists: %d %s", resp.StatusCode, body)
			}
			var got struct {
				BatchID     string `json:"batch_id"`
				Rows        int    `json:"rows"`
				Addresses   int    `json:"addresses"`
				Duplicates  int    `json:"duplicates"`
				InvalidRows int    `json:"invalid_rows"`
				Charged     int64  `json:"charged"`
			}
			if err := json.Unmarshal(body, &got); err != nil {
				t.Fatal(err)
			}
			if got.Rows != n || got.Addresses != unique || got.Duplicates != valid-unique || got.InvalidRows != n-valid || got.Charged != int64(unique) {
				t.Fatalf("answer %s; want rows %d, addresses %d, duplicates %d, invalid_rows %d, charged %d",
					body, n, unique, valid-unique, n-valid, unique)
			}

			deadline := time.Now().Add(5 * time.Minute)
			for {
				resp := do("GET", "/api/v1/batches/"+got.BatchID, "", nil)
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				var bt struct {
					State  string `json:"state"`
					Total  int    `json:"total"`
					Name   string `json:"name"`
					Number int64  `json:"number"`
				}
				json.Unmarshal(b, &bt)
				if bt.Total != unique || bt.Name != "customers.csv" || bt.Number != 1 {
					t.Fatalf("batch %s; want total %d, name customers.csv, number 1", b, unique)
				}
				if bt.State == "completed" {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("batch not completed: %s", b)
				}
				time.Sleep(50 * time.Millisecond)
			}

			resp = do("GET", "/api/v1/batches/"+got.BatchID+"/results?format=csv", "", nil)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("export: %d", resp.StatusCode)
			}
			cr := csv.NewReader(resp.Body)
			header, err := cr.Read()
			if err != nil {
				t.Fatal(err)
			}
			if want := "email,name,note,status,score,reason,did_you_mean,is_disposable,is_role_based,is_free,provider"; !strings.HasPrefix(strings.Join(header, ","), want) {
				t.Fatalf("header %q; want it to start %q", header, want)
			}
			for i := 0; ; i++ {
				rec, err := cr.Read()
				if errors.Is(err, io.EOF) {
					if i != n {
						t.Fatalf("export: %d rows, want %d", i, n)
					}
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				want, v, _ := listRow(i)
				if strings.Join(rec[:3], "\x00") != strings.Join(want, "\x00") {
					t.Fatalf("row %d: %q; want %q first", i, rec[:3], want)
				}
				status := rec[3]
				if v && status != "LIKELY" || !v && (status != "INVALID_FORMAT" || rec[5] != "invalid_syntax") {
					t.Fatalf("row %d (%q): %q", i, want[0], rec[3:])
				}
			}
			resp.Body.Close()
			for group, want := range map[string]int{"safe": valid, "risky": 0, "remove": n - valid} {
				resp := do("GET", "/api/v1/batches/"+got.BatchID+"/results?format=csv&group="+group, "", nil)
				var lc lineCounter
				io.Copy(&lc, resp.Body)
				resp.Body.Close()
				if lines := int(lc) - 1; resp.StatusCode != 200 || lines != want {
					t.Fatalf("group %s: %d, %d rows; want %d", group, resp.StatusCode, lines, want)
				}
			}
			top := peak()
			t.Logf("%s: %d rows, %d unique: heap in use %.1f MiB before, peak %.1f MiB (+%.1f MiB)", tg.name, n, unique,
				float64(before)/(1<<20), float64(top)/(1<<20), (float64(top)-float64(before))/(1<<20))
			// On a shared backend the process holds a row at a time (and
			// the pages of the export): its heap does not grow with the
			// list. (The memory backend holds the list itself.)
			if tg.name != "memory" && top > before+maxListHeap {
				t.Errorf("heap grew by %.1f MiB; want at most %d MiB whatever the list's size", (float64(top)-float64(before))/(1<<20), maxListHeap>>20)
			}

			resp = do("GET", "/api/v1/account", "", nil)
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var acct struct {
				Balance int64 `json:"balance"`
			}
			json.Unmarshal(b, &acct)
			if acct.Balance != spare {
				t.Fatalf("balance %d after the list; want %d (charged exactly the %d unique addresses)", acct.Balance, spare, unique)
			}
			// A second list the balance cannot pay for is refused whole.
			resp = do("POST", "/api/v1/lists", "text/plain", strings.NewReader(strings.Repeat("x@example.org\n", 3)+fmt.Sprintf("%s\n", strings.Repeat("y", 3))+listOf(spare+1)))
			b, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusPaymentRequired {
				t.Fatalf("list beyond the balance: %d %s", resp.StatusCode, b)
			}
			resp = do("GET", "/api/v1/batches", "", nil)
			b, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
			if c := strings.Count(string(b), `"batch_id"`); c != 1 {
				t.Fatalf("%d batches after a refused list; want 1: %s", c, b)
			}
		})
	}
}

// maxListHeap bounds the heap a list's upload, validation and export add
// on a shared backend: 24 MiB, about what 100,000 rows would take held
// whole.
const maxListHeap = 24 << 20

// listOf returns n distinct addresses, one a line.
func listOf(n int) string {
	var sb strings.Builder
	for i := range n {
		fmt.Fprintf(&sb, "more%d@example.org\n", i)
	}
	return sb.String()
}

// lineCounter counts the newlines written to it.
type lineCounter int

func (c *lineCounter) Write(p []byte) (int, error) {
	*c += lineCounter(bytes.Count(p, []byte{'\n'}))
	return len(p), nil
}
