package main

import (
	"context"
	"io"
	"net/http"
	neturl "net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/validmail/validmail/httpapi/dashboard/mail/mailtest"
)

// TestConsoleMail: with -smtp-relay, sign-up mails a confirmation link
// pointing at -public-url and the credits arrive when it is followed;
// without, the start-up log says that accounts get their credits at once.
func TestConsoleMail(t *testing.T) {
	t.Parallel()
	plain := start(t, "-store", "memory")
	if plain.record("dashboard: no mailer: mail is written to this log, links included, and new accounts get their signup credits at once, unconfirmed") == nil {
		t.Error("without -smtp-relay the start-up log does not say that credits come at once")
	}

	srv := mailtest.Start(t, nil)
	in := start(t, "-store", "memory", "-dashboard-insecure-cookies", "-smtp-relay", srv.Addr,
		"-mail-from", "validmail <no-reply@validmail.test>", "-public-url", "https://console.validmail.test")
	if in.record("console mail goes through the SMTP relay; sign-ups get their credits when they confirm their email") == nil {
		t.Error("no start-up record of the relay")
	}
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	post := func(path string, form neturl.Values, cookie string) (*http.Response, string) {
		req, _ := http.NewRequest("POST", in.base+path, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if cookie != "" {
			req.Header.Set("Cookie", cookie)
		}
		resp, err := noFollow.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(b)
	}
	const email, password = "mailed@example.com", "a long enough passphrase"
	if resp, _ := post("/dashboard/signup", neturl.Values{"email": {email}, "password": {password}}, ""); resp.StatusCode != 200 {
		t.Fatalf("sign-up: %d", resp.StatusCode)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m, err := srv.WaitFor(ctx, email, "/dashboard/confirm?token=")
	if err != nil {
		t.Fatal(err)
	}
	link := regexp.MustCompile(`https://console\.validmail\.test/dashboard/confirm\?token=([A-Za-z0-9_-]+)`).FindStringSubmatch(m.Text())
	if link == nil || !strings.Contains(m.Header("From"), "no-reply@validmail.test") {
		t.Fatalf("confirmation mail from %q:\n%s", m.Header("From"), m.Text())
	}
	resp, page := post("/dashboard/confirm", neturl.Values{"token": {link[1]}, "password": {password}}, "")
	if resp.StatusCode != 200 || !strings.Contains(page, "<strong>300</strong>") || !strings.Contains(page, "vm_live_") {
		t.Fatalf("confirmation: %d\n%s", resp.StatusCode, page)
	}
}
