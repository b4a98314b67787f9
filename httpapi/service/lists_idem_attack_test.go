package service_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/validmail/validmail/httpapi/service"
)

// cutReader reads r, then fails as the body of a client that went away
// mid-upload: over HTTP/1.1 the read fails (io.ErrUnexpectedEOF) while
// the request's context lives on; over HTTP/2 the stream's reset
// cancels the context too (cancels set).
type cutReader struct {
	r       io.Reader
	cancels bool
	cancel  context.CancelFunc
}

func (c *cutReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if errors.Is(err, io.EOF) {
		if c.cancels {
			c.cancel()
		}
		return n, io.ErrUnexpectedEOF
	}
	return n, err
}

// An Idempotency-Key as strangers use it, on every backend and across two
// instances: one key in two accounts makes a list in each, each charged;
// keys differing in case are two keys; the longest key, holding a Redis
// hash tag's braces, colons and non-ASCII, replays; an upload cut off
// mid-way under a key leaves the key free, so its retry makes the list,
// charged once.
func TestListIdempotencyKeyStrangers(t *testing.T) {
	t.Parallel()
	for _, tg := range listTargets() {
		t.Run(tg.name, func(t *testing.T) {
			t.Parallel()
			bes := openTargetTwice(t, tg)
			var muxes []*service.Service
			for _, be := range bes {
				svc, err := service.New(be, &service.Config{Validator: instant{}, Workers: -1})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { svc.Close() })
				muxes = append(muxes, svc)
			}
			mux := func(i int) *service.Service { return muxes[i%len(muxes)] }
			ctx := t.Context()
			a, keyA, err := service.Bootstrap(ctx, bes[0].Accounts, service.BootstrapParams{Email: "a@example.org", Credits: 100})
			if err != nil {
				t.Fatal(err)
			}
			b, keyB, err := service.Bootstrap(ctx, bes[0].Accounts, service.BootstrapParams{Email: "b@example.org", Credits: 100})
			if err != nil {
				t.Fatal(err)
			}
			upload := func(i int, apiKey, idem string, body io.Reader) (int, map[string]any) {
				t.Helper()
				req := httptest.NewRequest("POST", "/api/v1/lists", body)
				if cr, ok := body.(*cutReader); ok {
					rctx, cancel := context.WithCancel(req.Context())
					cr.cancel = cancel
					req = req.WithContext(rctx)
				}
				req.Header.Set("x-api-key", apiKey)
				req.Header.Set("Content-Type", "text/csv")
				req.Header.Set("Idempotency-Key", idem)
				rec := httptest.NewRecorder()
				apiMux(t, mux(i)).ServeHTTP(rec, req)
				var m map[string]any
				if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil {
					t.Fatalf("upload: %d %q", rec.Code, rec.Body)
				}
				return rec.Code, m
			}
			const list = "email\na@example.org\nb@example.org\nc@example.org\n"
			text := func(s string) io.Reader { return strings.NewReader(s) }

			// One key, two accounts: two lists, two charges.
			codeA, firstA := upload(0, keyA, "shared", text(list))
			codeB, firstB := upload(1, keyB, "shared", text(list))
			if codeA != 202 || codeB != 202 || firstA["charged"] != float64(3) || firstB["charged"] != float64(3) || firstA["batch_id"] == firstB["batch_id"] {
				t.Fatalf("one key in two accounts: %d %v, %d %v; want two lists, each charged", codeA, firstA, codeB, firstB)
			}
			if code, m := upload(0, keyB, "shared", text(list)); code != 202 || m["batch_id"] != firstB["batch_id"] {
				t.Fatalf("account b's repeat: %d %v, want its own list %v", code, m, firstB["batch_id"])
			}

			// Keys differing only in case are two keys.
			if code, m := upload(1, keyA, "SHARED", text(list)); code != 202 || m["batch_id"] == firstA["batch_id"] || m["charged"] != float64(3) {
				t.Fatalf("key SHARED: %d %v, want a new list", code, m)
			}

			// The longest key (255 characters, as the document counts
			// them), with a hash tag's braces, colons and non-ASCII.
			long := "{x}:" + strings.Repeat("é", 120) + ":}{"
			long += strings.Repeat("k", 255-len(long))
			code, m := upload(0, keyA, long, text("email\nd@example.org\n"))
			if code != 202 || m["charged"] != float64(1) {
				t.Fatalf("the longest key: %d %v", code, m)
			}
			if code, again := upload(1, keyA, long, text("email\nd@example.org\n")); code != 202 || again["batch_id"] != m["batch_id"] {
				t.Fatalf("the longest key's repeat: %d %v, want %v", code, again, m["batch_id"])
			}
			if code, again := upload(1, keyA, strings.Repeat("k", 256), text("email\nd@example.org\n")); code != 400 || again["code"] != "invalid_body" {
				t.Fatalf("a key of 256 characters: %d %v", code, again)
			}

			// Cut off mid-way (as over HTTP/1.1): nothing kept, the key
			// stays free.
			if code, m := upload(0, keyA, "cut", &cutReader{r: text(list[:25])}); code != 400 {
				t.Fatalf("an upload cut off: %d %v, want 400", code, m)
			}
			code, cut := upload(1, keyA, "cut", text(list))
			if code != 202 || cut["charged"] != float64(3) {
				t.Fatalf("the retry after a cut: %d %v, want the list made and charged", code, cut)
			}
			if code, m := upload(0, keyA, "cut", text(list)); code != 202 || m["batch_id"] != cut["batch_id"] {
				t.Fatalf("a repeat of the retry: %d %v, want %v", code, m, cut["batch_id"])
			}

			for _, acct := range []struct {
				id   string
				want int64
			}{{a.ID, 100 - 3 - 3 - 1 - 3}, {b.ID, 100 - 3}} {
				if bal, err := bes[len(bes)-1].Credits.Balance(ctx, acct.id); err != nil || bal != acct.want {
					t.Errorf("balance %d, %v; want %d", bal, err, acct.want)
				}
			}
		})
	}
}

// An upload whose client hangs up over HTTP/2 (the stream's reset
// cancels the request's context as its body fails) is the client's doing,
// as it is over HTTP/1.1: answered 4xx, never 503 unavailable, which is
// logged as an error and counted in the 5xx rate the operators' alert
// watches, so that no stranger raises it by hanging up.
func TestListUploadHungUpIsNotUnavailable(t *testing.T) {
	t.Parallel()
	be := openTarget(t, listTarget{"memory", "memory"})
	svc, err := service.New(be, &service.Config{Validator: instant{}, Workers: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	_, key, err := service.Bootstrap(t.Context(), be.Accounts, service.BootstrapParams{Email: "a@example.org", Credits: 100})
	if err != nil {
		t.Fatal(err)
	}
	body := &cutReader{r: strings.NewReader("email\na@example.org\nb@exam"), cancels: true}
	req := httptest.NewRequest("POST", "/api/v1/lists", body)
	ctx, cancel := context.WithCancel(req.Context())
	body.cancel = cancel
	req = req.WithContext(ctx)
	req.Header.Set("x-api-key", key)
	req.Header.Set("Content-Type", "text/csv")
	rec := httptest.NewRecorder()
	apiMux(t, svc).ServeHTTP(rec, req)
	if rec.Code >= 500 {
		t.Fatalf("an upload hung up over HTTP/2: %d %s, want a 4xx", rec.Code, rec.Body)
	}
}

// Two different files sent at once under one key, one to each instance:
// one list is made and charged, the other upload is 422
// idempotency_key_reused, whichever commits first.
func TestListIdempotencyKeyRaceOfTwoFiles(t *testing.T) {
	t.Parallel()
	for _, tg := range listTargets() {
		t.Run(tg.name, func(t *testing.T) {
			t.Parallel()
			bes := openTargetTwice(t, tg)
			var handlers []http.Handler
			for _, be := range bes {
				svc, err := service.New(be, &service.Config{Validator: instant{}, Workers: -1})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { svc.Close() })
				handlers = append(handlers, apiMux(t, svc))
			}
			acct, key, err := service.Bootstrap(t.Context(), bes[0].Accounts, service.BootstrapParams{Email: "race@example.org", Credits: 100})
			if err != nil {
				t.Fatal(err)
			}
			files := []string{"email\na@example.org\n", "email\nb@example.org\nc@example.org\n"}
			codes := make([]int, len(files))
			var wg sync.WaitGroup
			for i, file := range files {
				wg.Go(func() {
					req := httptest.NewRequest("POST", "/api/v1/lists", strings.NewReader(file))
					req.Header.Set("x-api-key", key)
					req.Header.Set("Content-Type", "text/csv")
					req.Header.Set("Idempotency-Key", "race")
					rec := httptest.NewRecorder()
					handlers[i%len(handlers)].ServeHTTP(rec, req)
					codes[i] = rec.Code
				})
			}
			wg.Wait()
			slices.Sort(codes)
			if codes[0] != 202 || codes[1] != 422 {
				t.Fatalf("two files under one key at once answered %v, want 202 and 422", codes)
			}
			bal, err := bes[len(bes)-1].Credits.Balance(t.Context(), acct.ID)
			if err != nil || (bal != 99 && bal != 98) {
				t.Fatalf("balance %d, %v; want one of the two lists charged", bal, err)
			}
		})
	}
}
