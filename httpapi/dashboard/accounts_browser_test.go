package dashboard_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/validmail/validmail/httpapi/dashboard/mail/mailtest"
)

// TestAccountsInBrowser walks an account's life in a real browser, with
// mail read from a loopback SMTP relay: sign up, sign in unconfirmed and
// see no credits, follow the confirmation link and get them, ask for a
// new password, set it from the mailed link, and find the old session
// gone. Each new page is checked at 1280 and 320 px.
func TestAccountsInBrowser(t *testing.T) {
	for _, js := range []bool{true, false} {
		t.Run(fmt.Sprintf("javascript=%v", js), func(t *testing.T) {
			srv := mailtest.Start(t, nil)
			s := startSite(t, nil, withMail(t, srv))
			ctx := browser(t, js)
			email := fmt.Sprintf("ada-%v@example.com", js)
			check := func(page string) { t.Helper(); checkPage(t, ctx, js, "account", page) }
			text := func(sel string) string { t.Helper(); return readText(t, ctx, sel) }

			// Sign up: the answer says to look for mail.
			run(t, ctx, "sign up",
				chromedp.Navigate(s.base+"/dashboard/signup"),
				chromedp.WaitVisible("#email", chromedp.ByID),
				chromedp.SendKeys("#email", email, chromedp.ByID),
				chromedp.SendKeys("#password", passphrase, chromedp.ByID),
				chromedp.Submit("#password", chromedp.ByID),
				chromedp.WaitVisible(`//h1[normalize-space()="Check your inbox"]`),
			)
			check("sent")
			link := waitLink(t, srv, email, "confirm")
			// Opened signed out, the link asks for the password too.
			run(t, ctx, "open the link signed out", chromedp.Navigate(link), chromedp.WaitVisible("#password", chromedp.ByID))
			check("confirm-signed-out")

			// Signed in before confirming: no credits, a reminder.
			run(t, ctx, "sign in unconfirmed",
				chromedp.Navigate(s.base+"/dashboard/login"),
				chromedp.WaitVisible("#password", chromedp.ByID),
				chromedp.SendKeys("#email", email, chromedp.ByID),
				chromedp.SendKeys("#password", passphrase, chromedp.ByID),
				chromedp.Submit("#password", chromedp.ByID),
				chromedp.WaitVisible("#balance", chromedp.ByID),
			)
			if b := text("#balance"); b != "0" || !strings.Contains(text("main"), "Confirm your email") {
				t.Fatalf("unconfirmed: balance %q, page %q", b, text("main"))
			}
			check("unconfirmed")

			// The mailed link: a page whose button confirms.
			run(t, ctx, "open the link", chromedp.Navigate(link), chromedp.WaitVisible(`//button[normalize-space()="Confirm my email"]`))
			check("confirm")
			var key string
			run(t, ctx, "confirm",
				chromedp.Click(`//button[normalize-space()="Confirm my email"]`),
				chromedp.WaitVisible("#secret-value", chromedp.ByID),
				chromedp.Value("#secret-value", &key, chromedp.ByID),
			)
			if !strings.HasPrefix(key, "vm_live_") || !strings.Contains(text("main"), "300") {
				t.Fatalf("welcome: key %q, page %q", key, text("main"))
			}
			check("welcome")
			run(t, ctx, "overview", chromedp.Navigate(s.base+"/dashboard/"), chromedp.WaitVisible("#balance", chromedp.ByID))
			if b := text("#balance"); b != "300" || strings.Contains(text("main"), "Send the link again") {
				t.Fatalf("confirmed: balance %q, page %q", b, text("main"))
			}
			var old []*network.Cookie
			run(t, ctx, "the session's cookies", chromedp.ActionFunc(func(ctx context.Context) error {
				var err error
				old, err = network.GetCookies().Do(ctx)
				return err
			}))
			run(t, ctx, "account page", chromedp.Navigate(s.base+"/dashboard/account"), chromedp.WaitVisible("#current", chromedp.ByID))
			check("account")
			// The mail when a batch finishes: off, then turned on.
			var on bool
			run(t, ctx, "finish mail off at first", chromedp.WaitVisible("#finish-mail", chromedp.ByID), chromedp.Evaluate(`document.getElementById("finish-mail").checked`, &on))
			if on {
				t.Fatal("the finish mail is on before it was chosen")
			}
			run(t, ctx, "turn the finish mail on",
				chromedp.Click("#finish-mail", chromedp.ByID),
				chromedp.Click(`#notices button`, chromedp.ByQuery),
				chromedp.WaitVisible(`//*[contains(., "when a batch or list finishes.")]`),
				chromedp.WaitVisible("#finish-mail", chromedp.ByID),
				chromedp.Evaluate(`document.getElementById("finish-mail").checked`, &on),
			)
			if !on {
				t.Fatal("the finish mail is off after turning it on")
			}
			check("finish-mail")

			// Forgot the password: the mailed link sets a new one.
			run(t, ctx, "forgot",
				chromedp.Navigate(s.base+"/dashboard/forgot"),
				chromedp.WaitVisible("#email", chromedp.ByID),
			)
			check("forgot")
			run(t, ctx, "ask for a link",
				chromedp.SendKeys("#email", email, chromedp.ByID),
				chromedp.Submit("#email", chromedp.ByID),
				chromedp.WaitVisible(`//h1[normalize-space()="Check your inbox"]`),
			)
			reset := waitLink(t, srv, email, "reset")
			run(t, ctx, "open the reset link", chromedp.Navigate(reset), chromedp.WaitVisible("#password", chromedp.ByID))
			check("reset")
			run(t, ctx, "set a new password",
				chromedp.SendKeys("#password", "a brand new passphrase", chromedp.ByID),
				chromedp.Submit("#password", chromedp.ByID),
				chromedp.WaitVisible(`//p[contains(., "Your password is changed")]`),
			)
			check("after-reset")

			// The old session is gone, in the browser and for anyone
			// holding its cookie.
			req, _ := http.NewRequest("GET", s.base+"/dashboard/", nil)
			for _, c := range old {
				req.AddCookie(&http.Cookie{Name: c.Name, Value: c.Value})
			}
			noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
			resp, err := noFollow.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusSeeOther || !strings.Contains(resp.Header.Get("Location"), "/dashboard/login") {
				t.Fatalf("the old session after the reset: %d %s", resp.StatusCode, resp.Header.Get("Location"))
			}
			var loc string
			run(t, ctx, "console after the reset", chromedp.Navigate(s.base+"/dashboard/"), chromedp.WaitVisible("#password", chromedp.ByID), chromedp.Location(&loc))
			if !strings.Contains(loc, "/dashboard/login") {
				t.Fatalf("after the reset the console led to %s", loc)
			}

			// The new password signs in; the old one does not.
			run(t, ctx, "sign in with the old password",
				chromedp.SendKeys("#email", email, chromedp.ByID),
				chromedp.SendKeys("#password", passphrase, chromedp.ByID),
				chromedp.Submit("#password", chromedp.ByID),
				chromedp.WaitVisible("#form-error", chromedp.ByID),
			)
			run(t, ctx, "sign in with the new password",
				chromedp.SendKeys("#password", "a brand new passphrase", chromedp.ByID),
				chromedp.Submit("#password", chromedp.ByID),
				chromedp.WaitVisible("#balance", chromedp.ByID),
			)
			if b := text("#balance"); b != "300" {
				t.Fatalf("after the reset: balance %q", b)
			}
		})
	}
}

// fits fails the test when the page is wider than a 320 px screen.
func fits(t *testing.T, ctx context.Context, page string) {
	t.Helper()
	var width int
	run(t, ctx, "narrow "+page, emulation.SetDeviceMetricsOverride(320, 720, 1, true),
		chromedp.Evaluate(`document.documentElement.scrollWidth`, &width))
	if width > 320 {
		var wide string
		chromedp.Run(ctx, chromedp.Evaluate(`[...document.querySelectorAll("body *")].filter(e => e.getBoundingClientRect().right > 321).slice(0, 5).map(e => e.tagName + "." + e.className + "#" + e.id + " " + Math.round(e.getBoundingClientRect().right)).join(", ")`, &wide))
		t.Errorf("%s is %d px wide on a 320 px screen: %s", page, width, wide)
	}
	run(t, ctx, "wide", emulation.ClearDeviceMetricsOverride())
}
