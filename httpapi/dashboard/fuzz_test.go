package dashboard_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/emailcheck/dnstest"
	"github.com/validmail/validmail/httpapi/dashboard"
	"github.com/validmail/validmail/httpapi/service"
	"github.com/validmail/validmail/store"
	"github.com/validmail/validmail/store/backend"
	"github.com/validmail/validmail/store/memstore"
	"github.com/validmail/validmail/store/storeurl"
)

// fieldSite is the service over one backend, driven in process, with a
// signed-in console session and an API key carrying every permission.
type fieldSite struct {
	name    string
	h       http.Handler
	cookies []*http.Cookie
	key     string
}

func newFieldSite(tb testing.TB, name string, b *backend.Backend) *fieldSite {
	tb.Helper()
	dns := dnstest.Start(tb, dnstest.Zone{"good.com": {MX: []dnstest.MX{{Pref: 10, Host: "mx.good.com"}}}}, nil)
	svc, err := service.New(b, &service.Config{
		Checks:    &emailcheck.Config{Nameservers: []string{dns.Addr()}, AllowPrivateMX: true},
		Dashboard: &dashboard.Config{InsecureCookies: true, SignupsPerHour: 1 << 20, BulkLimit: 1 << 30},
		Workers:   -1,
	})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { svc.Close() })
	s := &fieldSite{name: name, h: svc.Mux()}
	form := url.Values{"email": {"fields@example.com"}, "password": {"a long enough passphrase"}}
	rec := s.do(tb, "POST", "/dashboard/signup", "application/x-www-form-urlencoded", []byte(form.Encode()), nil)
	if rec.Code != http.StatusOK {
		tb.Fatalf("sign-up: %d", rec.Code)
	}
	// Sign-up signs no one in: the first sign-in does.
	rec = s.do(tb, "POST", "/dashboard/login", "application/x-www-form-urlencoded", []byte(form.Encode()), nil)
	if rec.Code != http.StatusOK && rec.Code != http.StatusSeeOther {
		tb.Fatalf("sign-in: %d", rec.Code)
	}
	s.cookies = rec.Result().Cookies()
	if len(s.cookies) == 0 {
		tb.Fatal("sign-in set no session cookie")
	}
	acct, err := b.Accounts.GetAccountByEmail(context.Background(), "fields@example.com")
	if err != nil {
		tb.Fatal(err)
	}
	_, s.key, err = b.Accounts.CreateKey(context.Background(), store.CreateKeyParams{AccountID: acct.ID, Name: "all", Permissions: store.AllPermissions()})
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

func (s *fieldSite) do(tb testing.TB, method, target, ct string, body []byte, hdr map[string]string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, "http://console.test/", bytes.NewReader(body))
	// The target is set raw, as a client could send it.
	r.RequestURI = target
	if u, err := url.ParseRequestURI(target); err == nil {
		r.URL = u
	} else {
		r.URL = &url.URL{Path: "/"}
	}
	if ct != "" {
		r.Header.Set("Content-Type", ct)
	}
	for k, v := range hdr {
		r.Header[k] = []string{v}
	}
	for _, c := range s.cookies {
		r.AddCookie(c)
	}
	if strings.HasPrefix(target, "/api/") || strings.HasPrefix(target, "/validate") {
		r.Header.Set("X-Api-Key", s.key)
	}
	rec := httptest.NewRecorder()
	s.h.ServeHTTP(rec, r)
	return rec
}

// fieldSites returns a site on memory and one on each shared backend the
// environment names.
func fieldSites(f *testing.F) []*fieldSite {
	sites := []*fieldSite{newFieldSite(f, "memory", memstore.NewBackend())}
	if raw := os.Getenv("VALIDMAIL_TEST_POSTGRES"); raw != "" {
		ns := "fuzz_" + strings.ReplaceAll(uuid.NewString()[:8], "-", "")
		sep := "?"
		if strings.Contains(raw, "?") {
			sep = "&"
		}
		b, err := storeurl.Open(context.Background(), raw+sep+"schema="+ns, nil)
		if err != nil {
			f.Fatal(err)
		}
		f.Cleanup(func() { b.Close(); dropSchema(f, raw, ns) })
		sites = append(sites, newFieldSite(f, "postgres", b))
	} else {
		f.Log("VALIDMAIL_TEST_POSTGRES is not set: memory only")
	}
	return sites
}

// rawJSON puts v between quotes in a JSON document as it is, bytes a
// JSON encoder would escape or replace included.
func rawJSON(format, v string) []byte {
	return []byte(strings.Replace(format, "%s", v, 1))
}

func formBody(field, v string, extra ...string) []byte {
	form := url.Values{field: {v}}
	for i := 0; i+1 < len(extra); i += 2 {
		form.Set(extra[i], extra[i+1])
	}
	return []byte(form.Encode())
}

func fileBody(name, content string) ([]byte, string) {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	fw, _ := mw.CreateFormFile("file", name)
	io.WriteString(fw, content)
	mw.Close()
	return buf.Bytes(), mw.FormDataContentType()
}

// fieldRoutes are every console form field and API field or parameter a
// stranger fills, each taking the fuzzed value.
var fieldRoutes = []func(s *fieldSite, tb testing.TB, v string) *httptest.ResponseRecorder{
	// The API.
	func(s *fieldSite, tb testing.TB, v string) *httptest.ResponseRecorder {
		return s.do(tb, "GET", "/validate?email="+url.QueryEscape(v), "", nil, nil)
	},
	func(s *fieldSite, tb testing.TB, v string) *httptest.ResponseRecorder {
		return s.do(tb, "POST", "/validate/async", "application/json", rawJSON(`{"emails":["%s"]}`, v), nil)
	},
	func(s *fieldSite, tb testing.TB, v string) *httptest.ResponseRecorder {
		b, _ := json.Marshal(map[string][]string{"emails": {v}})
		return s.do(tb, "POST", "/validate/async", "application/json", b, map[string]string{"Idempotency-Key": v})
	},
	func(s *fieldSite, tb testing.TB, v string) *httptest.ResponseRecorder {
		return s.do(tb, "POST", "/api/v1/keys", "application/json", rawJSON(`{"name":"%s","permissions":["validate"]}`, v), nil)
	},
	func(s *fieldSite, tb testing.TB, v string) *httptest.ResponseRecorder {
		return s.do(tb, "PUT", "/api/v1/webhook", "application/json", rawJSON(`{"url":"%s"}`, v), nil)
	},
	func(s *fieldSite, tb testing.TB, v string) *httptest.ResponseRecorder {
		b, _ := json.Marshal(map[string]any{"url": "https://example.com/hook", "events": []string{v}})
		return s.do(tb, "PUT", "/api/v1/webhook", "application/json", b, nil)
	},
	func(s *fieldSite, tb testing.TB, v string) *httptest.ResponseRecorder {
		return s.do(tb, "GET", "/api/v1/webhook/deliveries?cursor="+base64.RawURLEncoding.EncodeToString([]byte(v)), "", nil, nil)
	},
	func(s *fieldSite, tb testing.TB, v string) *httptest.ResponseRecorder {
		return s.do(tb, "GET", "/api/v1/batches?cursor="+base64.RawURLEncoding.EncodeToString([]byte(v)), "", nil, nil)
	},
	func(s *fieldSite, tb testing.TB, v string) *httptest.ResponseRecorder {
		return s.do(tb, "GET", "/api/v1/credits/history?cursor="+base64.RawURLEncoding.EncodeToString([]byte(v)), "", nil, nil)
	},
	func(s *fieldSite, tb testing.TB, v string) *httptest.ResponseRecorder {
		return s.do(tb, "GET", "/validate/status/"+url.PathEscape(v), "", nil, nil)
	},
	func(s *fieldSite, tb testing.TB, v string) *httptest.ResponseRecorder {
		return s.do(tb, "GET", "/api/v1/batches/"+url.PathEscape(v)+"/results?status="+url.QueryEscape(v), "", nil, nil)
	},
	func(s *fieldSite, tb testing.TB, v string) *httptest.ResponseRecorder {
		return s.do(tb, "DELETE", "/api/v1/keys/"+url.PathEscape(v), "", nil, nil)
	},
	// The console.
	func(s *fieldSite, tb testing.TB, v string) *httptest.ResponseRecorder {
		return s.do(tb, "POST", "/dashboard/login", "application/x-www-form-urlencoded", formBody("email", v, "password", "a long enough passphrase"), nil)
	},
	func(s *fieldSite, tb testing.TB, v string) *httptest.ResponseRecorder {
		return s.do(tb, "POST", "/dashboard/login", "application/x-www-form-urlencoded", formBody("password", v, "email", "fields@example.com", "next", v), nil)
	},
	func(s *fieldSite, tb testing.TB, v string) *httptest.ResponseRecorder {
		return s.do(tb, "POST", "/dashboard/signup", "application/x-www-form-urlencoded", formBody("email", v, "password", "a long enough passphrase"), nil)
	},
	func(s *fieldSite, tb testing.TB, v string) *httptest.ResponseRecorder {
		return s.do(tb, "POST", "/dashboard/signup", "application/x-www-form-urlencoded", formBody("password", v, "email", "pw-"+uuid.NewString()+"@example.com"), nil)
	},
	func(s *fieldSite, tb testing.TB, v string) *httptest.ResponseRecorder {
		return s.do(tb, "POST", "/dashboard/keys", "application/x-www-form-urlencoded", formBody("name", v, "permissions", "validate"), nil)
	},
	func(s *fieldSite, tb testing.TB, v string) *httptest.ResponseRecorder {
		return s.do(tb, "POST", "/dashboard/keys", "application/x-www-form-urlencoded", formBody("permissions", v, "name", "k"), nil)
	},
	func(s *fieldSite, tb testing.TB, v string) *httptest.ResponseRecorder {
		return s.do(tb, "POST", "/dashboard/webhook", "application/x-www-form-urlencoded", formBody("url", v, "events", "batch.completed"), nil)
	},
	func(s *fieldSite, tb testing.TB, v string) *httptest.ResponseRecorder {
		return s.do(tb, "POST", "/dashboard/webhook", "application/x-www-form-urlencoded", formBody("events", v, "url", "https://example.com/hook"), nil)
	},
	func(s *fieldSite, tb testing.TB, v string) *httptest.ResponseRecorder {
		return s.do(tb, "POST", "/dashboard/bulk", "application/x-www-form-urlencoded", formBody("emails", v), nil)
	},
	func(s *fieldSite, tb testing.TB, v string) *httptest.ResponseRecorder {
		b, ct := fileBody("list.csv", v)
		return s.do(tb, "POST", "/dashboard/bulk", ct, b, nil)
	},
	func(s *fieldSite, tb testing.TB, v string) *httptest.ResponseRecorder {
		b, ct := fileBody("list.txt", v)
		return s.do(tb, "POST", "/dashboard/bulk", ct, b, nil)
	},
	func(s *fieldSite, tb testing.TB, v string) *httptest.ResponseRecorder {
		return s.do(tb, "POST", "/dashboard/keys/"+url.PathEscape(v)+"/revoke", "", nil, nil)
	},
	func(s *fieldSite, tb testing.TB, v string) *httptest.ResponseRecorder {
		return s.do(tb, "GET", "/dashboard/batches?before="+url.QueryEscape(v), "", nil, nil)
	},
	func(s *fieldSite, tb testing.TB, v string) *httptest.ResponseRecorder {
		return s.do(tb, "GET", "/dashboard/batches/"+url.PathEscape(v)+"?status="+url.QueryEscape(v)+"&after="+url.QueryEscape(v), "", nil, nil)
	},
	func(s *fieldSite, tb testing.TB, v string) *httptest.ResponseRecorder {
		return s.do(tb, "GET", "/dashboard/batches/"+url.PathEscape(v)+"/results.csv?status="+url.QueryEscape(v), "", nil, nil)
	},
	func(s *fieldSite, tb testing.TB, v string) *httptest.ResponseRecorder {
		return s.do(tb, "GET", "/dashboard/login?next="+url.QueryEscape(v), "", nil, nil)
	},
}

// FuzzFields puts arbitrary bytes in every console form field and API
// field, on memory and, when VALIDMAIL_TEST_POSTGRES is set, PostgreSQL:
// no answer is a 5xx.
func FuzzFields(f *testing.F) {
	sites := fieldSites(f)
	for route := range fieldRoutes {
		for _, v := range []string{
			"a@good.com", "", "\x00", "a\x00b@good.com", "jos\xe9@gmail.com", "\xff\xfe", "%ff", "https://example.com/\xff",
			"0:\xff\xfe", "1:\x00", "99999999999999999:x", "-1:msg_x", "123", "\xef\xbb\xbfa@good.com\n\x00\n",
			"email\njos\xe9@gmail.com\n", "\ufffd", strings.Repeat("é", 600),
		} {
			f.Add(uint8(route), v)
		}
	}
	f.Fuzz(func(t *testing.T, route uint8, v string) {
		do := fieldRoutes[int(route)%len(fieldRoutes)]
		for _, s := range sites {
			rec := do(s, t, v)
			if rec.Code >= 500 {
				t.Fatalf("%s: route %d with %q: %d\n%.500s", s.name, int(route)%len(fieldRoutes), v, rec.Code, rec.Body)
			}
		}
	})
}
