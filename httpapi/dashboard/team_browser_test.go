package dashboard_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestTeamInBrowser: the owner invites a member from the team page; the
// member follows the mailed link, chooses a password, signs out and in
// again, and finds no keys page: neither in the navigation nor by its
// address (403).
func TestTeamInBrowser(t *testing.T) {
	for _, js := range []bool{true, false} {
		t.Run(fmt.Sprintf("javascript=%v", js), func(t *testing.T) {
			o := newTeamMail()
			s := startSite(t, nil, withTeamMail(o))
			ownerEmail := fmt.Sprintf("owner-%v@example.com", js)
			memberEmail := fmt.Sprintf("member-%v@example.com", js)
			confirmedOwner(t, s.base, o, ownerEmail)
			ctx := browser(t, js)
			check := func(page string) { t.Helper(); checkPage(t, ctx, js, "team", page) }
			text := func(sel string) string { t.Helper(); return readText(t, ctx, sel) }
			signIn := func(email, password string) {
				t.Helper()
				run(t, ctx, "sign in as "+email,
					chromedp.Navigate(s.base+"/dashboard/login"),
					chromedp.WaitVisible("#password", chromedp.ByID),
					chromedp.SendKeys("#email", email, chromedp.ByID),
					chromedp.SendKeys("#password", password, chromedp.ByID),
					chromedp.Submit("#password", chromedp.ByID),
					chromedp.WaitVisible("#balance", chromedp.ByID),
				)
			}
			signOut := func() {
				t.Helper()
				run(t, ctx, "sign out", chromedp.Click(`//button[normalize-space()="Sign out"]`), chromedp.WaitVisible("#password", chromedp.ByID))
			}

			signIn(ownerEmail, passphrase)
			run(t, ctx, "team page", chromedp.Click(`//nav//a[normalize-space()="Team"]`), chromedp.WaitVisible("#email", chromedp.ByID))
			check("invite")
			run(t, ctx, "invite",
				chromedp.SendKeys("#email", memberEmail, chromedp.ByID),
				chromedp.Click(`//button[normalize-space()="Send the invitation"]`),
				chromedp.WaitVisible(`//p[contains(., "An invitation is on its way")]`),
			)
			check("invited")
			signOut()

			link := o.link(t, memberEmail, "/join")
			run(t, ctx, "open the invitation", chromedp.Navigate(link), chromedp.WaitVisible("#password", chromedp.ByID))
			check("join")
			run(t, ctx, "join",
				chromedp.SendKeys("#password", "the member's own passphrase", chromedp.ByID),
				chromedp.Submit("#password", chromedp.ByID),
				chromedp.WaitVisible("#balance", chromedp.ByID),
			)
			signOut()
			signIn(memberEmail, "the member's own passphrase")
			nav := text("header nav")
			if strings.Contains(nav, "API Keys") || strings.Contains(nav, "Webhook") || strings.Contains(nav, "Team") || !strings.Contains(nav, "Bulk") ||
				!strings.Contains(text("header"), memberEmail) {
				t.Fatalf("a member's navigation: %q, header %q", nav, text("header"))
			}
			check("member-overview")
			run(t, ctx, "keys page", chromedp.Navigate(s.base+"/dashboard/keys"), chromedp.WaitVisible(`//p[contains(., "Your role in this team does not allow this page")]`))
			check("member-keys-refused")
			if strings.Contains(text("main"), "Create New Key") {
				t.Fatal("the keys page is shown to a member")
			}
		})
	}
}
