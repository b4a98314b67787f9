package dashboard_test

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/validmail/validmail/httpapi/dashboard"
)

// TestListToolInBrowser uploads a list on the bulk page in a real
// browser, with JavaScript and without: the preview shows the address
// column and the cost, the confirmation leads to the batch's progress,
// and its "Safe to send" download holds the list's good rows with their
// columns. Screenshots at 1280 and 320 px.
func TestListToolInBrowser(t *testing.T) {
	for _, js := range []bool{true, false} {
		t.Run(fmt.Sprintf("javascript=%v", js), func(t *testing.T) {
			s := startSite(t, nil, func(dc *dashboard.Config, _ string) { dc.BulkLimit = 5 })
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
			both := func(page, name string) {
				check(page)
				noSideways(t, ctx, page, 1280)
				if js {
					shoot(t, ctx, name)
				}
				atWidth(t, ctx, 320, func() {
					noSideways(t, ctx, page, 320)
					if js {
						shoot(t, ctx, "narrow-"+name)
					}
				})
			}
			email := "lists-" + tag + "@example.com"
			newUser(t, s.base).do("POST", "/dashboard/signup", url.Values{"email": {email}, "password": {"a long enough passphrase"}})
			file := filepath.Join(t.TempDir(), "spring-customers.csv")
			if err := os.WriteFile(file, []byte(customers), 0o644); err != nil {
				t.Fatal(err)
			}
			run(t, ctx, "sign in",
				chromedp.Navigate(s.base+"/dashboard/login"),
				chromedp.WaitVisible("#password", chromedp.ByID),
				chromedp.SendKeys("#email", email, chromedp.ByID),
				chromedp.SendKeys("#password", "a long enough passphrase", chromedp.ByID),
				chromedp.Submit("#password", chromedp.ByID),
				chromedp.WaitVisible("#secret-value", chromedp.ByID),
			)
			run(t, ctx, "bulk page", chromedp.Navigate(s.base+"/dashboard/bulk"), chromedp.WaitVisible("#list-file", chromedp.ByID))
			both("bulk", "list-upload")

			// Upload: the preview and its cost.
			var credits, column, free string
			run(t, ctx, "upload",
				chromedp.SendKeys("#list-name", "Spring customers", chromedp.ByID),
				chromedp.SetUploadFiles("#list-file", []string{file}, chromedp.ByID),
				chromedp.Click(`//button[normalize-space()="Upload and preview"]`),
				chromedp.WaitVisible("#cost", chromedp.ByID),
				chromedp.Text("#credits", &credits, chromedp.ByID),
				chromedp.Text("#free", &free, chromedp.ByID),
				chromedp.Text("th.addr", &column, chromedp.ByQuery),
			)
			if credits != "3" || free != "5" || !strings.HasPrefix(strings.ToLower(column), "mail") {
				t.Fatalf("preview: %s credits, %s free, column %q", credits, free, column)
			}
			both("list preview", "list-preview")

			// Confirm: the batch's progress, then its downloads.
			run(t, ctx, "confirm", chromedp.Click("#confirm", chromedp.ByID), chromedp.WaitVisible("#progress", chromedp.ByID))
			// The page polls its progress (by htmx, or a meta refresh
			// without JavaScript) until the list is complete.
			settle(t, ctx, "the list completed", `document.getElementById("state")?.textContent == "completed" && `+settledPage, time.Minute)
			var title string
			run(t, ctx, "title", chromedp.Title(&title))
			if !strings.HasPrefix(title, "Spring customers (batch 1)") {
				t.Fatalf("batch page title %q", title)
			}
			run(t, ctx, "downloads", chromedp.WaitVisible("#downloads", chromedp.ByID))
			both("list batch", "list-batch")
			var rows, unique, junk, batchURL string
			run(t, ctx, "counts", chromedp.Text("#list-rows", &rows, chromedp.ByID), chromedp.Text("#list-unique", &unique, chromedp.ByID),
				chromedp.Text("#list-junk", &junk, chromedp.ByID), chromedp.Location(&batchURL))
			if rows != "11" || unique != "8" || junk != "1" {
				t.Fatalf("the list's counts: %s rows, %s unique, %s without an address", rows, unique, junk)
			}
			// Each group's size beside its downloads, the .xlsx one
			// included.
			var safe, remove, xlsx string
			var hasXLSX bool
			run(t, ctx, "group sizes", chromedp.Text("#size-safe", &safe, chromedp.ByID), chromedp.Text("#size-remove", &remove, chromedp.ByID),
				chromedp.AttributeValue(`li.g-safe a.xlsx`, "href", &xlsx, &hasXLSX, chromedp.ByQuery))
			if safe != "8 rows" || remove != "3 rows" || !hasXLSX || !strings.Contains(xlsx, "/list.xlsx?group=safe") {
				t.Fatalf("the groups: safe %q, remove %q, .xlsx link %q", safe, remove, xlsx)
			}
			var href string
			var ok bool
			run(t, ctx, "safe link", chromedp.AttributeValue(`//a[normalize-space()="Safe to send"]`, "href", &href, &ok))
			var cookies []*network.Cookie
			run(t, ctx, "cookies", chromedp.ActionFunc(func(c2 context.Context) error {
				var err error
				cookies, err = network.GetCookies().Do(c2)
				return err
			}))
			req, _ := http.NewRequest("GET", s.base+href, nil)
			for _, c := range cookies {
				req.AddCookie(&http.Cookie{Name: c.Name, Value: c.Value})
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			recs, err := csv.NewReader(strings.NewReader(string(body))).ReadAll()
			if resp.StatusCode != 200 || err != nil || len(recs) != 9 || strings.Join(recs[0][:4], ",") != "name,Mail,city,status" ||
				!strings.Contains(resp.Header.Get("Content-Disposition"), "Spring-customers-safe.csv") {
				t.Fatalf("safe to send: %d %v %s\n%s", resp.StatusCode, err, resp.Header.Get("Content-Disposition"), body)
			}

			// The batches table names the list.
			run(t, ctx, "batches", chromedp.Navigate(s.base+"/dashboard/batches"), chromedp.WaitVisible(`//a[normalize-space()="Spring customers"]`))
			both("batches", "list-batches")

			// Delete it from its page, after a confirmation.
			run(t, ctx, "delete", chromedp.Navigate(batchURL), chromedp.WaitVisible("#delete-batch", chromedp.ByID),
				chromedp.Click("#delete-batch", chromedp.ByID), chromedp.WaitVisible("#delete", chromedp.ByID))
			both("batch delete", "list-delete")
			var gone bool
			run(t, ctx, "confirm delete", chromedp.Click("#delete", chromedp.ByID), chromedp.WaitVisible(`//*[contains(., "is deleted")]`),
				chromedp.Evaluate(`![...document.querySelectorAll("main a")].some(a => a.textContent.trim() == "Spring customers")`, &gone))
			if !gone {
				t.Fatal("the batches still name the deleted list")
			}
			var code int
			run(t, ctx, "deleted page", chromedp.Navigate(batchURL), chromedp.WaitReady("main", chromedp.ByQuery),
				chromedp.Evaluate(`document.title`, new(string)))
			req, _ = http.NewRequest("GET", batchURL, nil)
			for _, c := range cookies {
				req.AddCookie(&http.Cookie{Name: c.Name, Value: c.Value})
			}
			if resp, err := http.DefaultClient.Do(req); err == nil {
				code = resp.StatusCode
				resp.Body.Close()
			}
			if code != http.StatusNotFound {
				t.Fatalf("the deleted batch's page: %d", code)
			}
		})
	}
}
