package httpapi_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/validmail/validmail/store"
)

// FuzzRequestDecoding sends arbitrary query strings, bodies and headers:
// the answer is a 2xx or a 4xx problem document, never a 5xx or a panic.
func FuzzRequestDecoding(f *testing.F) {
	fx := setup(f, &options{credits: 1_000_000, noLog: true, maxBody: 4096})
	f.Add(uint8(0), "email=a@good.com", "", "", "")
	f.Add(uint8(0), "email=%ZZ&email=b", "", "", "")
	f.Add(uint8(1), "", `{"emails":["a@good.com"]}`, "application/json", "k1")
	f.Add(uint8(1), "", `{"emails":[null,1,{}]}`, "application/json; charset=utf-8", "")
	f.Add(uint8(1), "", `{"emails":"x"}`, "text/plain", "")
	f.Add(uint8(1), "", `{"emails":["a\u0000b@good.com","\udcff@good.com"]}`, "application/json", "k\x00")
	f.Add(uint8(0), "email=a%00b%FF@good.com", "", "", "")
	f.Add(uint8(2), "", "", "", "")
	f.Add(uint8(3), "", `{"name":"x","permissions":["stats","nope"]}`, "application/json", "")
	f.Add(uint8(4), "1", "", "", "")
	f.Fuzz(func(t *testing.T, route uint8, query, body, contentType, idemKey string) {
		var method, target string
		switch route % 6 {
		case 0:
			method, target = "GET", "/validate?"+query
		case 1:
			method, target = "POST", "/validate/async?"+query
		case 2:
			method, target = "GET", "/api/v1/account?"+query
		case 3:
			method, target = "POST", "/api/v1/keys?"+query
		case 4:
			method, target = "GET", "/validate/status/"+query
		case 5:
			method, target = "DELETE", "/api/v1/keys/"+query
		}
		r, err := http.NewRequestWithContext(context.Background(), method, "http://api.test"+target, bytes.NewReader([]byte(body)))
		if err != nil {
			t.Skip()
		}
		r.Header.Set("x-api-key", fx.key)
		if contentType != "" {
			r.Header.Set("Content-Type", contentType)
		}
		if idemKey != "" {
			r.Header.Set("Idempotency-Key", idemKey)
		}
		rec := httptest.NewRecorder()
		fx.checked.ServeHTTP(rec, r)
		switch {
		case rec.Code >= 200 && rec.Code < 300:
		case rec.Code >= 400 && rec.Code < 500:
			if rec.Header().Get("Content-Type") != "application/problem+json" {
				t.Fatalf("%s %q: %d with %q", method, target, rec.Code, rec.Header().Get("Content-Type"))
			}
		default:
			t.Fatalf("%s %q body %q: status %d: %s", method, target, body, rec.Code, rec.Body)
		}
	})
}

// BenchmarkValidateCached measures GET /validate on a domain whose DNS
// answer is cached, on memstore, with the default rate limiter switched
// off.
func BenchmarkValidateCached(b *testing.B) {
	f := setup(b, &options{credits: 1 << 40, noLog: true})
	key := f.newKey(b, f.acct.ID, []store.Permission{store.PermValidate})
	warm := httptest.NewRequest("GET", "/validate?email=a@good.com", nil)
	warm.Header.Set("x-api-key", key)
	f.h.ServeHTTP(httptest.NewRecorder(), warm)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		r := httptest.NewRequest("GET", "/validate?email=jane.doe@good.com", nil)
		r.Header.Set("x-api-key", key)
		for pb.Next() {
			rec := httptest.NewRecorder()
			f.h.ServeHTTP(rec, r)
			if rec.Code != 200 {
				b.Fatalf("status %d: %s", rec.Code, rec.Body)
			}
		}
	})
}
