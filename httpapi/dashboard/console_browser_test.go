package dashboard_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/validmail/validmail/httpapi/dashboard"
)

// shootView saves what a screen of the page shows (not the whole page),
// when -update is set: for pages too long for one image.
func shootView(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	if !*update {
		return
	}
	var png []byte
	run(t, ctx, "screenshot "+name, chromedp.CaptureScreenshot(&png))
	if err := os.WriteFile(filepath.Join("testdata", "screenshots", name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// atWidth runs f with the screen w px wide, then back to the default.
func atWidth(t *testing.T, ctx context.Context, w int64, f func()) {
	t.Helper()
	run(t, ctx, fmt.Sprint("screen ", w), emulation.SetDeviceMetricsOverride(w, 800, 1, w < 600))
	defer run(t, ctx, "screen back", emulation.ClearDeviceMetricsOverride())
	f()
}

// noSideways fails when the page is wider than the screen or a command
// box hides part of its text behind a scroll bar.
func noSideways(t *testing.T, ctx context.Context, page string, screen int) {
	t.Helper()
	var width int
	var cut string
	run(t, ctx, "widths of "+page,
		chromedp.Evaluate(`document.documentElement.scrollWidth`, &width),
		chromedp.Evaluate(`[...document.querySelectorAll("pre")].filter(p => p.scrollWidth > p.clientWidth + 1).map(p => p.textContent.slice(0, 40) + " " + p.scrollWidth + ">" + p.clientWidth).join("; ")`, &cut))
	if width > screen {
		var wide string
		// The text that sticks out, and the element holding it.
		chromedp.Run(ctx, chromedp.Evaluate(fmt.Sprintf(`(() => { const w = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT); const out = []; let n;
			while ((n = w.nextNode()) && out.length < 5) { const r = document.createRange(); r.selectNodeContents(n); const b = r.getBoundingClientRect();
			if (b.right > %d) out.push(n.parentElement.tagName + "." + n.parentElement.className + " " + JSON.stringify(n.textContent.slice(0, 40)) + " " + Math.round(b.right)); }
			return out.join(", "); })()`, screen+1), &wide))
		t.Errorf("%s is %d px wide on a %d px screen: %s", page, width, screen, wide)
	}
	if cut != "" {
		t.Errorf("%s at %d px: a box cuts its text off: %s", page, screen, cut)
	}
}

// TestConsoleDetailsInBrowser walks the pages of the welcome example, the
// key form's defaults, the webhook's test delivery and deletion, the API
// reference and the overview's credit sources, at 1280 and 320 px, with
// JavaScript and without.
func TestConsoleDetailsInBrowser(t *testing.T) {
	for _, js := range []bool{true, false} {
		t.Run(fmt.Sprintf("javascript=%v", js), func(t *testing.T) {
			s := startSite(t, nil, func(dc *dashboard.Config, _ string) { dc.BillingURL = "https://pay.example.net/buy" })
			ctx := browser(t, js)
			tag := "js"
			if !js {
				tag = "nojs"
			}
			check := func(page string) {
				if js {
					axeCheck(t, ctx, page)
				}
			}
			email := "details-" + tag + "@example.com"
			newUser(t, s.base).do("POST", "/dashboard/signup", url.Values{"email": {email}, "password": {"a long enough passphrase"}})

			// The welcome page: the example wraps in its box at both widths.
			var example string
			run(t, ctx, "sign in",
				chromedp.Navigate(s.base+"/dashboard/login"),
				chromedp.WaitVisible("#password", chromedp.ByID),
				chromedp.SendKeys("#email", email, chromedp.ByID),
				chromedp.SendKeys("#password", "a long enough passphrase", chromedp.ByID),
				chromedp.Submit("#password", chromedp.ByID),
				chromedp.WaitVisible("pre.cmd", chromedp.ByQuery),
				chromedp.Text("pre.cmd", &example, chromedp.ByQuery),
			)
			if !strings.Contains(example, "/validate?email=jane.doe@gmail.com") {
				t.Fatalf("the example is %q", example)
			}
			check("welcome")
			noSideways(t, ctx, "welcome", 1280)
			if js {
				shoot(t, ctx, "welcome")
			}
			atWidth(t, ctx, 320, func() {
				noSideways(t, ctx, "welcome", 320)
				if js {
					shoot(t, ctx, "narrow-welcome")
				}
			})

			// Keys: stats is checked by default.
			var stats bool
			run(t, ctx, "keys", chromedp.Navigate(s.base+"/dashboard/keys"), chromedp.WaitVisible("#name", chromedp.ByID),
				chromedp.Evaluate(`document.querySelector('input[name=permissions][value=stats]').checked`, &stats))
			if !stats {
				t.Error("stats is not checked on the key form")
			}
			check("keys")
			if js {
				shoot(t, ctx, "keys-defaults")
				atWidth(t, ctx, 320, func() {
					noSideways(t, ctx, "keys", 320)
					shoot(t, ctx, "narrow-keys-defaults")
				})
			}

			// Overview: where the credits came from, and the checkout.
			var sources string
			run(t, ctx, "overview", chromedp.Navigate(s.base+"/dashboard/"), chromedp.WaitVisible("#credit-sources", chromedp.ByID),
				chromedp.Text("#credit-sources", &sources, chromedp.ByID), chromedp.WaitVisible(`//a[normalize-space()="Get credits"]`))
			if sources != "300 from signup · 0 granted · 0 refunded · 0 spent" {
				t.Errorf("credit sources %q", sources)
			}
			check("overview")
			if js {
				shoot(t, ctx, "overview-sources")
				atWidth(t, ctx, 320, func() {
					noSideways(t, ctx, "overview", 320)
					shoot(t, ctx, "narrow-overview-sources")
				})
			}

			// Webhook: save, test (the delivery shows in the log), delete.
			run(t, ctx, "save the webhook",
				chromedp.Navigate(s.base+"/dashboard/webhook"),
				chromedp.WaitVisible("#url", chromedp.ByID),
				chromedp.SendKeys("#url", s.receiver.URL+"/hooks", chromedp.ByID),
				chromedp.Click(`//button[normalize-space()="Save"]`),
				chromedp.WaitVisible("#secret-value", chromedp.ByID),
				chromedp.Click(`//button[normalize-space()="Send test event"]`),
				chromedp.WaitVisible("#test-h", chromedp.ByID),
			)
			waitTestDelivered(t, ctx)
			var logRow string
			run(t, ctx, "the delivery log", chromedp.Text("tr.current", &logRow, chromedp.ByQuery))
			if !strings.Contains(logRow, "webhook.test") || !strings.Contains(logRow, "delivered") || !strings.Contains(logRow, "204") {
				t.Errorf("the log's row of the test event: %q", logRow)
			}
			check("webhook test delivered")
			shoot(t, ctx, "webhook-test-"+tag)
			atWidth(t, ctx, 320, func() {
				noSideways(t, ctx, "webhook", 320)
				if js {
					shoot(t, ctx, "narrow-webhook-test")
				}
			})
			run(t, ctx, "delete confirmation",
				chromedp.Click(`//a[normalize-space()="Delete the webhook"]`),
				chromedp.WaitVisible(`button.danger`, chromedp.ByQuery),
			)
			check("webhook delete")
			if js {
				shoot(t, ctx, "webhook-delete")
				atWidth(t, ctx, 320, func() {
					noSideways(t, ctx, "webhook delete", 320)
					shoot(t, ctx, "narrow-webhook-delete")
				})
			}
			var flash string
			run(t, ctx, "delete",
				chromedp.Click(`button.danger`, chromedp.ByQuery),
				chromedp.WaitVisible(".flash", chromedp.ByQuery),
				chromedp.Text(".flash", &flash, chromedp.ByQuery),
			)
			if !strings.Contains(flash, "The webhook is deleted") {
				t.Errorf("after deletion: %q", flash)
			}
			var field string
			run(t, ctx, "the form is empty", chromedp.Value("#url", &field, chromedp.ByID))
			if field != "" {
				t.Errorf("the URL field holds %q after deletion", field)
			}
			check("webhook deleted")
			shoot(t, ctx, "webhook-deleted-"+tag)

			// The API reference, from the footer, readable at both widths.
			run(t, ctx, "API reference",
				chromedp.Click(`//footer//a[normalize-space()="API reference"]`),
				chromedp.WaitVisible("#op-validate", chromedp.ByID),
			)
			check("reference")
			noSideways(t, ctx, "reference", 1280)
			shootView(t, ctx, "reference-"+tag)
			atWidth(t, ctx, 320, func() {
				noSideways(t, ctx, "reference", 320)
				if js {
					shootView(t, ctx, "narrow-reference")
					run(t, ctx, "to a schema", chromedp.Navigate(s.base+"/dashboard/reference#schema-ValidationResponse"), chromedp.WaitVisible("#schema-ValidationResponse", chromedp.ByID))
					shootView(t, ctx, "narrow-reference-schema")
				}
			})
			run(t, ctx, "follow a schema link",
				chromedp.Navigate(s.base+"/dashboard/reference"),
				chromedp.WaitVisible("#op-validate", chromedp.ByID),
				chromedp.Click(`#op-validate a[href="#schema-ValidationResponse"]`, chromedp.ByQuery),
				chromedp.WaitVisible("#schema-ValidationResponse", chromedp.ByID),
			)
			if js {
				shootView(t, ctx, "reference-schema")
			}

			// The demo's page, with its JSON.
			run(t, ctx, "demo", chromedp.Navigate(s.base+"/demo?email=jane@good.com"), chromedp.WaitVisible("#result-h", chromedp.ByID))
			var raw string
			run(t, ctx, "demo JSON", chromedp.TextContent("details pre", &raw, chromedp.ByQuery))
			if !strings.Contains(raw, `"requestId": "`) {
				t.Errorf("the demo's JSON lacks requestId: %s", raw)
			}
		})
	}
}
