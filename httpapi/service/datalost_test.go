package service_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/validmail/validmail/httpapi/dashboard"
	"github.com/validmail/validmail/httpapi/service"
	"github.com/validmail/validmail/store"
	"github.com/validmail/validmail/store/redisstore"
	"github.com/validmail/validmail/store/storeurl"
)

// TestRedisDataLost empties the service's Redis keys, as a server
// restarting without persistence does: /readyz fails naming the loss, and
// customers get 503 "lost its data" instead of 401 for every key.
func TestRedisDataLost(t *testing.T) {
	raw := os.Getenv("VALIDMAIL_TEST_REDIS")
	if raw == "" {
		t.Skip("VALIDMAIL_TEST_REDIS is not set")
	}
	ctx := context.Background()
	prefix := "lost-" + uuid.NewString()
	sep := "?"
	if strings.Contains(raw, "?") {
		sep = "&"
	}
	u := raw + sep + "prefix=" + prefix
	b, err := storeurl.Open(ctx, u, &storeurl.Options{Init: true})
	if err != nil {
		t.Fatal(err)
	}
	opt, err := redis.ParseURL(raw)
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { rdb.Close() })
	empty := func() {
		keys, err := rdb.Keys(ctx, "{"+prefix+"}*").Result()
		if err != nil {
			t.Fatal(err)
		}
		if len(keys) > 0 {
			rdb.Unlink(ctx, keys...)
		}
	}
	t.Cleanup(empty)
	svc, err := service.New(b, &service.Config{
		Validator: instant{}, Workers: -1,
		Dashboard: &dashboard.Config{InsecureCookies: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	_, key, err := service.Bootstrap(ctx, b.Accounts, service.BootstrapParams{Email: "lost@example.org", Credits: 10})
	if err != nil {
		t.Fatal(err)
	}
	serve := func(method, target string, form url.Values, hdr ...string) *httptest.ResponseRecorder {
		var r *http.Request
		if form != nil {
			r = httptest.NewRequest(method, target, strings.NewReader(form.Encode()))
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		} else {
			r = httptest.NewRequest(method, target, nil)
		}
		for i := 0; i+1 < len(hdr); i += 2 {
			r.Header.Set(hdr[i], hdr[i+1])
		}
		rec := httptest.NewRecorder()
		apiMux(t, svc).ServeHTTP(rec, r)
		return rec
	}
	if rec := serve("GET", "/readyz", nil); rec.Code != http.StatusOK || !strings.HasPrefix(rec.Body.String(), "ready\n") {
		t.Fatalf("/readyz before: %d %q", rec.Code, rec.Body)
	}
	if rec := serve("GET", "/validate?email=jane@example.org", nil, "x-api-key", key); rec.Code != http.StatusOK {
		t.Fatalf("a key before: %d %s", rec.Code, rec.Body)
	}

	empty()

	// Another key, so that no instance holds it in its key cache.
	other := "vm_live_" + strings.Repeat("B", 43)
	rec := serve("GET", "/validate?email=jane@example.org", nil, "x-api-key", other)
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "lost its data") || rec.Header().Get("Retry-After") == "" {
		t.Fatalf("a key after the loss: %d %s", rec.Code, rec.Body)
	}
	if rec := serve("GET", "/readyz", nil); rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "backend: store lost its data") {
		t.Fatalf("/readyz after: %d %q", rec.Code, rec.Body)
	}
	rec = serve("POST", "/dashboard/login", url.Values{"email": {"lost@example.org"}, "password": {"a long enough passphrase"}})
	if rec.Code != http.StatusServiceUnavailable {
		t.Fatalf("sign-in after the loss: %d", rec.Code)
	}

	// A restart after the loss: the new process refuses to start, since
	// nobody said the store is new.
	if b2, err := storeurl.Open(ctx, u, nil); !errors.Is(err, store.ErrDataLost) || !strings.Contains(err.Error(), "-store-init") {
		if err == nil {
			b2.Close()
		}
		t.Fatalf("a new instance's Open after the loss: %v, want ErrDataLost naming -store-init", err)
	}
	// A host that skips the start-up check serves 503 for every request
	// that needs the store, never 401 for the lost key.
	rdb2 := redis.NewClient(opt)
	t.Cleanup(func() { rdb2.Close() })
	b3, err := redisstore.NewBackend(rdb2, &redisstore.Config{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	svc3, err := service.New(b3, &service.Config{Validator: instant{}, Workers: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc3.Close() })
	for range 3 {
		r := httptest.NewRequest("GET", "/validate?email=jane@example.org", nil)
		r.Header.Set("x-api-key", key)
		rec := httptest.NewRecorder()
		apiMux(t, svc3).ServeHTTP(rec, r)
		if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "lost its data") {
			t.Fatalf("the lost key on a new instance: %d %s", rec.Code, rec.Body)
		}
	}
	rec = httptest.NewRecorder()
	svc3.Mux().ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "backend: store lost its data") {
		t.Fatalf("/readyz of a new instance: %d %q", rec.Code, rec.Body)
	}
	if n, err := rdb.Exists(ctx, "{"+prefix+"}marker").Result(); err != nil || n != 0 {
		t.Fatalf("a new instance wrote a marker: %d, %v", n, err)
	}
}
