package dashboard_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/pquerna/otp/totp"
)

// TestTwoFactorInBrowser: an owner turns on two-factor sign-in from the
// account page (the key as a QR code and as text), confirms it with a
// current code and is shown ten recovery codes; a sign-in then asks for
// a code after the password, and takes a recovery code instead.
func TestTwoFactorInBrowser(t *testing.T) {
	for _, js := range []bool{true, false} {
		t.Run(fmt.Sprintf("javascript=%v", js), func(t *testing.T) {
			o := newTeamMail()
			clock := &testClock{}
			s := startSite(t, nil, withTeamMail(o), withClock(clock))
			email := fmt.Sprintf("totp-%v@example.com", js)
			confirmedOwner(t, s.base, o, email)
			ctx := browser(t, js)
			check := func(page string) { t.Helper(); checkPage(t, ctx, js, "totp", page) }
			text := func(sel string) string { t.Helper(); return strings.TrimSpace(readText(t, ctx, sel)) }
			password := func() {
				t.Helper()
				run(t, ctx, "password",
					chromedp.Navigate(s.base+"/dashboard/login"),
					chromedp.WaitVisible("#password", chromedp.ByID),
					chromedp.SendKeys("#email", email, chromedp.ByID),
					chromedp.SendKeys("#password", passphrase, chromedp.ByID),
					chromedp.Submit("#password", chromedp.ByID),
					chromedp.WaitVisible("#code", chromedp.ByID),
				)
			}
			code := func(c string) {
				t.Helper()
				run(t, ctx, "code", chromedp.SendKeys("#code", c, chromedp.ByID), chromedp.Submit("#code", chromedp.ByID),
					chromedp.WaitVisible("#balance", chromedp.ByID))
			}
			signOut := func() {
				t.Helper()
				run(t, ctx, "sign out", chromedp.Click(`//button[normalize-space()="Sign out"]`), chromedp.WaitVisible("#password", chromedp.ByID))
			}

			run(t, ctx, "sign in",
				chromedp.Navigate(s.base+"/dashboard/login"),
				chromedp.WaitVisible("#password", chromedp.ByID),
				chromedp.SendKeys("#email", email, chromedp.ByID),
				chromedp.SendKeys("#password", passphrase, chromedp.ByID),
				chromedp.Submit("#password", chromedp.ByID),
				chromedp.WaitVisible("#balance", chromedp.ByID),
			)
			run(t, ctx, "setup page",
				chromedp.Click(`//nav//a[normalize-space()="Account"]`),
				chromedp.WaitVisible(`//a[normalize-space()="Manage two-factor sign-in"]`),
				chromedp.Click(`//a[normalize-space()="Manage two-factor sign-in"]`),
				chromedp.WaitVisible("#totp-secret", chromedp.ByID),
			)
			check("setup")
			secret := text("#totp-secret")
			if uri := text("#totp-uri"); !strings.HasPrefix(uri, "otpauth://totp/") || !strings.Contains(uri, "secret="+secret) {
				t.Errorf("the otpauth URI %q does not hold the key %q", uri, secret)
			}
			if js {
				var width int
				run(t, ctx, "QR code", chromedp.Evaluate(`document.querySelector("img.qr").naturalWidth`, &width))
				if width < 100 {
					t.Errorf("the QR code is %d pixels wide", width)
				}
			}
			now, _ := totp.GenerateCode(secret, clock.now())
			run(t, ctx, "confirm", chromedp.SendKeys("#code", now, chromedp.ByID), chromedp.Submit("#code", chromedp.ByID),
				chromedp.WaitVisible("#recovery-codes", chromedp.ByID))
			check("recovery-codes")
			codes := strings.Fields(text("#recovery-codes"))
			if len(codes) != 10 {
				t.Fatalf("recovery codes: %q", codes)
			}
			signOut()

			password()
			check("code")
			clock.step()
			now, _ = totp.GenerateCode(secret, clock.now())
			code(now)
			signOut()

			password()
			code(codes[0])
			if f := text("main"); !strings.Contains(f, "recovery code") {
				t.Errorf("no note of the recovery code used: %q", f)
			}
			check("signed-in-by-recovery-code")
		})
	}
}
