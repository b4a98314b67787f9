package httpapi_test

import (
	"bytes"
	"mime/multipart"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// multipartList returns a multipart body holding list as its file part,
// with a random boundary, and its Content-Type.
func multipartList(t *testing.T, list string) (string, string) {
	t.Helper()
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	fw, err := mw.CreateFormFile("file", "customers.csv")
	if err != nil {
		t.Fatal(err)
	}
	fw.Write([]byte(list))
	mw.Close()
	return b.String(), mw.FormDataContentType()
}

// A list upload with an Idempotency-Key applies once: a repeat of the
// same file (also in a multipart body of another boundary) answers the
// first list and charges nothing, concurrent repeats make one batch, the
// key with another file (or another column) is 422, and a bad key is 400.
func TestListIdempotencyKey(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	const list = "email,name\na@good.com,A\nb@good.com,B\nA@good.com,again\n"
	upload := func(key, target, ctype, body string) *response {
		return f.do(t, req{method: "POST", target: target, key: f.key, body: body,
			header: map[string]string{"Content-Type": ctype, "Idempotency-Key": key}})
	}
	first := upload("k1", "/api/v1/lists", "text/csv", list)
	if first.Code != 202 {
		t.Fatalf("first upload: %d %s", first.Code, first.Body)
	}
	want := first.JSON(t)
	delete(want, "requestId")
	if want["charged"] != float64(2) {
		t.Fatalf("first upload: %s", first.Body)
	}
	same := func(name string, resp *response) {
		t.Helper()
		if resp.Code != 202 {
			t.Fatalf("%s: %d %s", name, resp.Code, resp.Body)
		}
		got := resp.JSON(t)
		delete(got, "requestId")
		if keysOf(got) != keysOf(want) || got["batch_id"] != want["batch_id"] || got["rows"] != want["rows"] || got["charged"] != want["charged"] {
			t.Fatalf("%s answered %s, want the first list %v", name, resp.Body, want)
		}
	}
	same("repeat", upload("k1", "/api/v1/lists", "text/csv", list))
	// A multipart body carries the same file: the file's name becomes
	// the list's name, so name it alike.
	mp := upload("k2", "/api/v1/lists?name=customers.csv", "text/csv", list)
	if mp.Code != 202 {
		t.Fatalf("k2: %d %s", mp.Code, mp.Body)
	}
	for range 2 {
		body, ctype := multipartList(t, list) // a new boundary each time
		resp := upload("k2", "/api/v1/lists", ctype, body)
		if resp.Code != 202 || resp.JSON(t)["batch_id"] != mp.JSON(t)["batch_id"] {
			t.Fatalf("multipart repeat: %d %s, want batch %v", resp.Code, resp.Body, mp.JSON(t)["batch_id"])
		}
	}
	for name, resp := range map[string]*response{
		"another file":   upload("k1", "/api/v1/lists", "text/csv", list+"c@good.com,C\n"),
		"another column": upload("k1", "/api/v1/lists?column=1", "text/csv", list),
		"another name":   upload("k1", "/api/v1/lists?name=other", "text/csv", list),
	} {
		if resp.Code != 422 || resp.JSON(t)["code"] != "idempotency_key_reused" {
			t.Errorf("the key with %s: %d %s, want 422 idempotency_key_reused", name, resp.Code, resp.Body)
		}
	}
	wantProblem(t, upload("k\x01", "/api/v1/lists", "text/csv", list), 400, "invalid_body")
	wantProblem(t, upload(strings.Repeat("k", 256), "/api/v1/lists", "text/csv", list), 400, "invalid_body")
	// The list and the batch key spaces are apart: k1 is free for a batch.
	if resp := f.do(t, req{method: "POST", target: "/validate/async", key: f.key, body: `{"emails":["z@good.com"]}`, header: map[string]string{"Idempotency-Key": "k1"}}); resp.Code != 202 {
		t.Fatalf("batch under a list's key: %d %s", resp.Code, resp.Body)
	}

	// Concurrent uploads under one key: one batch, one charge. The
	// handler reads two lists of an account at once and answers 429 to a
	// third: that one is sent again, as a client would.
	const n = 6
	var wg sync.WaitGroup
	ids := make([]any, n)
	for i := range n {
		wg.Go(func() {
			deadline := time.Now().Add(time.Minute)
			for {
				resp := upload("k3", "/api/v1/lists", "text/csv", "email\nc@good.com\nd@good.com\n")
				if resp.Code == http.StatusTooManyRequests && time.Now().Before(deadline) {
					time.Sleep(10 * time.Millisecond)
					continue
				}
				if resp.Code == 202 {
					ids[i] = resp.JSON(t)["batch_id"]
				}
				return
			}
		})
	}
	wg.Wait()
	for i := range ids {
		if ids[i] == nil || ids[i] != ids[0] {
			t.Fatalf("concurrent uploads answered batches %v", ids)
		}
	}
	// 300 − 2 (k1) − 2 (k2) − 1 (the batch) − 2 (k3).
	if b := f.balance(t, f.acct.ID); b != 293 {
		t.Fatalf("balance %d, want 293", b)
	}
	resp := f.do(t, req{method: "GET", target: "/api/v1/batches?limit=100", key: f.key})
	if got := strings.Count(string(resp.Body), `"batch_id"`); got != 4 {
		t.Fatalf("%d batches, want 4: %s", got, resp.Body)
	}
}
