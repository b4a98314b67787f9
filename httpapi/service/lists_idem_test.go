package service_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/validmail/validmail/httpapi/service"
	"github.com/validmail/validmail/store/backend"
	"github.com/validmail/validmail/store/storeurl"
)

// openTargetTwice opens a fresh namespace of tg's backend twice, as two
// instances of a deployment would; memory, which no two instances share,
// once.
func openTargetTwice(tb testing.TB, tg listTarget) []*backend.Backend {
	tb.Helper()
	if tg.name == "memory" {
		return []*backend.Backend{openTarget(tb, tg)}
	}
	url := tg.url
	ns := "idem_" + strings.ReplaceAll(uuid.NewString()[:8], "-", "")
	switch tg.name {
	case "postgres":
		url += sep(url) + "schema=" + ns
		tb.Cleanup(func() { dropSchema(tb, tg.url, ns) })
	default:
		url += sep(url) + "prefix=" + ns
	}
	var out []*backend.Backend
	for i := range 2 {
		be, err := storeurl.Open(context.Background(), url, &storeurl.Options{Workers: 8, Init: i == 0})
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { be.Close() })
		out = append(out, be)
	}
	return out
}

// A list uploaded with one Idempotency-Key through one instance or two,
// one after the other or at once, makes one batch and one charge; the
// key with another list is 422 on every instance.
func TestListIdempotencyAcrossInstances(t *testing.T) {
	t.Parallel()
	for _, tg := range listTargets() {
		t.Run(tg.name, func(t *testing.T) {
			t.Parallel()
			bes := openTargetTwice(t, tg)
			var muxes []http.Handler
			for _, be := range bes {
				svc, err := service.New(be, &service.Config{Validator: instant{}, Workers: -1})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { svc.Close() })
				muxes = append(muxes, apiMux(t, svc))
			}
			acct, key, err := service.Bootstrap(t.Context(), bes[0].Accounts, service.BootstrapParams{Email: "idem@example.org", Credits: 100})
			if err != nil {
				t.Fatal(err)
			}
			upload := func(i int, idem, list string) (int, map[string]any) {
				req := httptest.NewRequest("POST", "/api/v1/lists", strings.NewReader(list))
				req.Header.Set("x-api-key", key)
				req.Header.Set("Content-Type", "text/csv")
				req.Header.Set("Idempotency-Key", idem)
				rec := httptest.NewRecorder()
				muxes[i%len(muxes)].ServeHTTP(rec, req)
				var m map[string]any
				if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil {
					t.Errorf("upload: %d %q", rec.Code, rec.Body)
				}
				return rec.Code, m
			}
			const list = "email\na@example.org\nb@example.org\nc@example.org\n"
			// One after the other, on each instance in turn.
			code, first := upload(0, "seq", list)
			if code != 202 || first["charged"] != float64(3) {
				t.Fatalf("first upload: %d %v", code, first)
			}
			for i := 1; i <= 3; i++ {
				if code, m := upload(i, "seq", list); code != 202 || m["batch_id"] != first["batch_id"] || m["charged"] != first["charged"] {
					t.Fatalf("repeat %d: %d %v, want batch %v", i, code, m, first["batch_id"])
				}
			}
			for i := range 2 {
				if code, m := upload(i, "seq", list+"d@example.org\n"); code != 422 || m["code"] != "idempotency_key_reused" {
					t.Fatalf("the key with another list on instance %d: %d %v", i, code, m)
				}
			}
			// At once, spread over the instances. An instance reads two
			// lists of an account at once and answers 429 to a third: that
			// one is sent again, as a client would.
			const n = 6
			batches := make([]any, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					deadline := time.Now().Add(time.Minute)
					for {
						code, m := upload(i, "once", "email\nx@example.org\ny@example.org\n")
						if code == http.StatusTooManyRequests && time.Now().Before(deadline) {
							time.Sleep(10 * time.Millisecond)
							continue
						}
						if code == 202 {
							batches[i] = m["batch_id"]
						}
						return
					}
				})
			}
			wg.Wait()
			for i := range batches {
				if batches[i] == nil || batches[i] != batches[0] {
					t.Fatalf("concurrent uploads answered batches %v", batches)
				}
			}
			if bal, err := bes[len(bes)-1].Credits.Balance(t.Context(), acct.ID); err != nil || bal != 100-3-2 {
				t.Fatalf("balance %d, %v; want %d", bal, err, 100-3-2)
			}
		})
	}
}
