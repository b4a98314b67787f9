package main

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/validmail/validmail/emailcheck/dnstest"
	"github.com/validmail/validmail/store"
)

// The operator's disposable list (-disposable-list) applies from the first
// request, is reloaded when its file changes, and its size shows in the
// metrics.
func TestDisposableListFlag(t *testing.T) {
	t.Parallel()
	z := zone()
	z["new-burner.io"] = dnstest.Domain{MX: []dnstest.MX{{Pref: 10, Host: "mx.new-burner.io"}}}
	z["newer-burner.io"] = dnstest.Domain{MX: []dnstest.MX{{Pref: 10, Host: "mx.newer-burner.io"}}}
	dnsSrv := dnstest.Start(t, z, nil)
	path := filepath.Join(t.TempDir(), "disposable.txt")
	if err := os.WriteFile(path, []byte("# ours\nnew-burner.io\ngmail.com\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	key := store.NewSecret()
	in := start(t, "-dns", dnsSrv.Addr(), "-workers", "0", "-metrics", "-bootstrap-email", "ops@example.com", "-bootstrap-key", key,
		"-disposable-list", path, "-disposable-list-interval", "20ms")
	c := client{t, in.base, key}
	status := func(email string) string {
		t.Helper()
		resp, m := c.do("GET", "/validate?email="+email, nil)
		conf, _ := m["confidence"].(map[string]any)
		if resp.StatusCode != 200 || conf == nil {
			t.Fatalf("GET /validate %s: %d %v", email, resp.StatusCode, m)
		}
		return conf["status"].(string)
	}
	if got := status("a@new-burner.io"); got != "DISPOSABLE" {
		t.Errorf("a listed domain: %s, want DISPOSABLE", got)
	}
	if got := status("a@gmail.com"); got != "LIKELY" {
		t.Errorf("a known provider on the list: %s, want LIKELY", got)
	}
	if err := os.WriteFile(path, []byte("new-burner.io\nnewer-burner.io\ngmail.com\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); status("a@newer-burner.io") != "DISPOSABLE"; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the file's change not taken within 30 s")
		}
	}
	resp, err := http.Get(in.metricsURL() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"validmail_disposable_list_domains 3", "validmail_disposable_list_loads_total 2", "validmail_disposable_list_age_seconds "} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics has no %q", want)
		}
	}
	in.stop()
}
