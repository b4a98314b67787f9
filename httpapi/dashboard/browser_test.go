package dashboard_test

import (
	"context"
	_ "embed"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/emailcheck/dnstest"
	"github.com/validmail/validmail/httpapi/dashboard"
	"github.com/validmail/validmail/httpapi/service"
	"github.com/validmail/validmail/store/backend"
	"github.com/validmail/validmail/store/memstore"
	"github.com/validmail/validmail/webhook"
)

var update = flag.Bool("update", false, "rewrite the screenshots under testdata/screenshots")

//go:embed testdata/axe/axe.min.js
var axeSource string

// chromium returns the browser to drive, or skips the test; on CI a
// missing browser fails it instead.
func chromium(t *testing.T) string {
	for _, name := range []string{os.Getenv("VALIDMAIL_CHROMIUM"), "chromium", "chromium-browser", "google-chrome"} {
		if name == "" {
			continue
		}
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("no Chromium found: the browser tests must run on CI (apt-get install chromium)")
	}
	t.Skip("no Chromium found; install the chromium package to run the browser tests")
	return ""
}

// site is the service with its dashboard on memory, a DNS server that
// knows good.com, and a webhook receiver on loopback.
type site struct {
	base     string
	receiver *httptest.Server
	mu       sync.Mutex
	hooks    []string
	// stop shuts the service down, as a SIGTERM would (later calls
	// do nothing).
	stop func()
}

// startSite starts the service on b (a new memory backend if nil); each
// option may change the dashboard's configuration, given the site's
// address.
func startSite(t *testing.T, b *backend.Backend, options ...func(dc *dashboard.Config, base string)) *site {
	t.Helper()
	dns := dnstest.Start(t, dnstest.Zone{
		"good.com":  {MX: []dnstest.MX{{Pref: 10, Host: "mx.good.com"}}},
		"other.com": {MX: []dnstest.MX{{Pref: 10, Host: "mx.other.com"}}},
	}, nil)
	s := &site{}
	s.receiver = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.hooks = append(s.hooks, string(body))
		s.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(s.receiver.Close)
	if b == nil {
		b = memstore.NewBackend()
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.base = "http://" + ln.Addr().String()
	dc := &dashboard.Config{InsecureCookies: true, SignupsPerHour: 1000}
	for _, o := range options {
		o(dc, s.base)
	}
	svc, err := service.New(b, &service.Config{
		Checks:        &emailcheck.Config{Nameservers: []string{dns.Addr()}, AllowPrivateMX: true},
		WebhookClient: webhook.ClientOptions{Allow: []string{"127.0.0.1"}},
		Dashboard:     dc,
		Workers:       4,
	})
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- svc.Serve(ctx, ln) }()
	var once sync.Once
	var serveErr error
	s.stop = func() {
		once.Do(func() {
			cancel()
			serveErr = <-done
		})
	}
	t.Cleanup(func() {
		s.stop()
		if serveErr != nil {
			t.Errorf("Serve: %v", serveErr)
		}
	})
	return s
}

func (s *site) received() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.hooks...)
}

// browser starts a headless Chromium; js false turns JavaScript off.
func browser(t *testing.T, js bool) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium(t)),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.WindowSize(1280, 900),
	)
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); acancel() })
	// A bound against a hung browser, not a measure: a walk through a
	// dozen pages, each checked for accessibility and photographed at two
	// widths, takes seconds on a quiet machine and minutes on a loaded one
	// running the race detector beside it.
	ctx, tcancel := context.WithTimeout(ctx, 10*time.Minute)
	t.Cleanup(tcancel)
	if err := chromedp.Run(ctx, network.Enable()); err != nil {
		t.Fatalf("starting Chromium: %v", err)
	}
	if !js {
		if err := chromedp.Run(ctx, emulation.SetScriptExecutionDisabled(true)); err != nil {
			t.Fatal(err)
		}
	}
	return ctx
}

// stepTimeout bounds one step of a browser test: a step a loaded machine
// makes slow finishes well within it, and one that waits for what never
// comes (a click lost to a page reloading itself, say) fails with the page
// it was on instead of holding the package until its timeout.
const stepTimeout = 2 * time.Minute

// run runs one step of a browser test, bounded by stepTimeout; a step that
// fails ends the test with where the browser was and what it showed.
func run(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action) {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	if err := chromedp.Run(sctx, actions...); err != nil {
		t.Fatalf("%s: %v\n%s", what, err, whereAmI(ctx))
	}
}

// whereAmI describes the browser's page for a failure: its address and
// the text of its main element, each read within seconds.
func whereAmI(ctx context.Context) string {
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var loc, body string
	chromedp.Run(rctx, chromedp.Location(&loc))
	chromedp.Run(rctx, chromedp.Evaluate(`(document.querySelector("main") || document.body || {}).innerText || ""`, &body))
	return fmt.Sprintf("(at %s)\n%s", loc, body)
}

// settledPage is true of a page that no longer reloads itself: no meta
// refresh (a browser without JavaScript parses the one in noscript as an
// element; with JavaScript it is text, and htmx, which swaps only main,
// leaves it behind) and no element polling by htmx.
const settledPage = `!document.querySelector('meta[http-equiv="refresh"], [hx-trigger^="every"]')`

// settle waits until cond, a JavaScript expression, is true of the
// browser's page, for up to within. A page that reloads or polls itself
// is read between two documents now and then; the errors that brings
// (a node or an execution context gone) mean "look again", not a failure.
func settle(t *testing.T, ctx context.Context, what, cond string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	var last error
	for {
		var ok bool
		actx, cancel := context.WithTimeout(ctx, 20*time.Second)
		last = chromedp.Run(actx, chromedp.Evaluate(`!!(`+cond+`)`, &ok))
		cancel()
		if last == nil && ok {
			return
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			t.Fatalf("%s: not so after %v (last error: %v)\n%s", what, within, last, whereAmI(ctx))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// shoot saves a screenshot of the page for the README when -update is set.
func shoot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	if !*update {
		return
	}
	var png []byte
	run(t, ctx, "screenshot "+name, chromedp.FullScreenshot(&png, 100))
	dir := filepath.Join("testdata", "screenshots")
	os.MkdirAll(dir, 0o755)
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// checkPage checks a console page as the browser tests do: axe with
// JavaScript, nothing wider than the window, and with -update its
// screenshots at the window's width and at 320 px, named prefix-page.
func checkPage(t *testing.T, ctx context.Context, js bool, prefix, page string) {
	t.Helper()
	if js {
		axeCheck(t, ctx, page)
	}
	fits(t, ctx, page)
	if js && *update {
		shoot(t, ctx, prefix+"-"+page)
		run(t, ctx, "narrow", emulation.SetDeviceMetricsOverride(320, 720, 1, true))
		shoot(t, ctx, "narrow-"+prefix+"-"+page)
		run(t, ctx, "wide", emulation.ClearDeviceMetricsOverride())
	}
}

// readText returns the text of the first element sel matches.
func readText(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	var s string
	run(t, ctx, "read "+sel, chromedp.Text(sel, &s, chromedp.ByQuery))
	return s
}

// axeCheck runs axe-core on the page and fails on serious or critical
// violations. It needs JavaScript.
func axeCheck(t *testing.T, ctx context.Context, page string) {
	t.Helper()
	if raw := axeViolations(t, ctx, page); raw != "[]" {
		t.Errorf("%s: accessibility violations: %s", page, raw)
	}
}

// axeViolations returns the page's serious and critical violations as
// JSON.
func axeViolations(t *testing.T, ctx context.Context, page string) string {
	t.Helper()
	var raw string
	run(t, ctx, "axe on "+page, chromedp.Evaluate(axeSource+`;0`, nil),
		chromedp.Evaluate(`axe.run(document, {resultTypes: ["violations"]}).then(r => JSON.stringify(r.violations.filter(v => v.impact === "serious" || v.impact === "critical").map(v => ({id: v.id, impact: v.impact, nodes: v.nodes.map(n => n.html).slice(0, 3)}))))`,
			&raw, func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }))
	return raw
}

// TestAxeFindsViolations shows the accessibility check can fail: a page
// with an unlabelled field and an image without text.
func TestAxeFindsViolations(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `<!doctype html><html lang="en"><title>bad</title><main><form><input type="text"></form><img src="x.png"></main></html>`)
	}))
	defer srv.Close()
	ctx := browser(t, true)
	run(t, ctx, "bad page", chromedp.Navigate(srv.URL), chromedp.WaitReady("body", chromedp.ByQuery))
	if raw := axeViolations(t, ctx, "bad page"); !strings.Contains(raw, "label") || !strings.Contains(raw, "image-alt") {
		t.Fatalf("violations %s, want label and image-alt", raw)
	}
}

// TestConsoleInBrowser walks a new customer's first session in a real
// browser, once with JavaScript and once without: sign up and see 300
// credits, create a key and call the API with it, validate 50 addresses
// and watch them complete, download the CSV, set a webhook and send the
// test event, sign out.
func TestConsoleInBrowser(t *testing.T) {
	for _, js := range []bool{true, false} {
		t.Run(fmt.Sprintf("javascript=%v", js), func(t *testing.T) {
			s := startSite(t, nil)
			ctx := browser(t, js)
			tag := "js"
			if !js {
				tag = "nojs"
			}
			email := "jane-" + tag + "@example.com"
			check := func(page string) {
				if js {
					axeCheck(t, ctx, page)
				}
			}

			// Sign up.
			run(t, ctx, "sign-up page", chromedp.Navigate(s.base+"/"), chromedp.WaitVisible("#email", chromedp.ByID))
			var loc string
			run(t, ctx, "where / leads", chromedp.Location(&loc))
			if !strings.HasSuffix(loc, "/dashboard/login?next=/dashboard/") {
				t.Fatalf("/ led to %s, want the sign-in page", loc)
			}
			run(t, ctx, "open sign-up", chromedp.Navigate(s.base+"/dashboard/signup"), chromedp.WaitVisible("#email", chromedp.ByID))
			check("signup")
			shoot(t, ctx, "signup-"+tag)
			var key, welcome string
			// Without a mailer the account is ready at once: sign in.
			run(t, ctx, "sign up",
				chromedp.SendKeys("#email", email, chromedp.ByID),
				chromedp.SendKeys("#password", "a long enough passphrase", chromedp.ByID),
				chromedp.Submit("#password", chromedp.ByID),
				chromedp.WaitVisible(`//h1[normalize-space()="Check your inbox"]`),
				chromedp.Navigate(s.base+"/dashboard/login"),
				chromedp.WaitVisible("#password", chromedp.ByID),
				chromedp.SendKeys("#email", email, chromedp.ByID),
				chromedp.SendKeys("#password", "a long enough passphrase", chromedp.ByID),
				chromedp.Submit("#password", chromedp.ByID),
				chromedp.WaitVisible("#secret-value", chromedp.ByID),
				chromedp.Value("#secret-value", &key, chromedp.ByID),
				chromedp.Text("main", &welcome, chromedp.ByQuery),
			)
			if !strings.HasPrefix(key, "vm_live_") || !strings.Contains(welcome, "300") {
				t.Fatalf("welcome page: key %q, text %q", key, welcome)
			}
			check("welcome")
			run(t, ctx, "overview", chromedp.Navigate(s.base+"/dashboard/"), chromedp.WaitVisible("#balance", chromedp.ByID))
			var balance string
			run(t, ctx, "balance", chromedp.Text("#balance", &balance, chromedp.ByID))
			if balance != "300" {
				t.Fatalf("balance %q, want 300", balance)
			}
			check("overview")
			shoot(t, ctx, "overview-"+tag)

			// Create a key and use it.
			run(t, ctx, "keys page", chromedp.Navigate(s.base+"/dashboard/keys"), chromedp.WaitVisible("#name", chromedp.ByID))
			check("keys")
			var newKey string
			run(t, ctx, "create a key",
				chromedp.SendKeys("#name", "signup form <b>", chromedp.ByID),
				chromedp.Click(`//button[normalize-space()="Create New Key"]`),
				chromedp.WaitVisible("#secret-value", chromedp.ByID),
				chromedp.Value("#secret-value", &newKey, chromedp.ByID),
			)
			check("new key")
			shoot(t, ctx, "keys-"+tag)
			run(t, ctx, "revoke confirmation", chromedp.Click(`//a[starts-with(normalize-space(), "Revoke")]`), chromedp.WaitVisible(`button.danger`, chromedp.ByQuery))
			check("revoke")
			req, _ := http.NewRequest("GET", s.base+"/validate?email=jane@good.com", nil)
			req.Header.Set("x-api-key", newKey)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var res map[string]any
			json.NewDecoder(resp.Body).Decode(&res)
			resp.Body.Close()
			if resp.StatusCode != 200 || res["email"] != "jane@good.com" {
				t.Fatalf("GET /validate with the new key: %d %v", resp.StatusCode, res)
			}

			// Bulk-validate 50 addresses and watch them complete.
			var list []string
			for i := range 50 {
				domain := "good.com"
				if i%5 == 4 {
					domain = "missing-domain.com"
				}
				list = append(list, fmt.Sprintf("user%d@%s", i, domain))
			}
			run(t, ctx, "bulk page", chromedp.Navigate(s.base+"/dashboard/bulk"), chromedp.WaitVisible("#emails", chromedp.ByID))
			check("bulk")
			shoot(t, ctx, "bulk-"+tag)
			run(t, ctx, "submit 50 addresses",
				chromedp.SetValue("#emails", strings.Join(list, "\n"), chromedp.ByID),
				chromedp.Click(`//button[normalize-space()="Validate"]`),
				chromedp.WaitVisible("#progress", chromedp.ByID),
			)
			settle(t, ctx, "the batch completed", `document.getElementById("state")?.textContent == "completed" && `+settledPage, time.Minute)
			var done string
			run(t, ctx, "results", chromedp.WaitVisible("table", chromedp.ByQuery), chromedp.Text("#done", &done, chromedp.ByID))
			if done != "50" {
				t.Fatalf("%s done, want 50", done)
			}
			check("batch")
			shoot(t, ctx, "batch-"+tag)

			// Download the CSV with the browser's session.
			var href string
			var ok bool
			run(t, ctx, "csv link", chromedp.AttributeValue(`a[download]`, "href", &href, &ok, chromedp.ByQuery))
			var cookies []*network.Cookie
			run(t, ctx, "cookies", chromedp.ActionFunc(func(ctx context.Context) error {
				var err error
				cookies, err = network.GetCookies().Do(ctx)
				return err
			}))
			creq, _ := http.NewRequest("GET", s.base+href, nil)
			for _, c := range cookies {
				creq.AddCookie(&http.Cookie{Name: c.Name, Value: c.Value})
			}
			cresp, err := http.DefaultClient.Do(creq)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(cresp.Body)
			cresp.Body.Close()
			lines := strings.Split(strings.TrimSpace(string(body)), "\n")
			if cresp.StatusCode != 200 || len(lines) != 51 || !strings.HasPrefix(lines[0], "job_id,email,") || !strings.Contains(string(body), ",INVALID_DOMAIN,") {
				t.Fatalf("CSV download: %d, %d lines: %.300s", cresp.StatusCode, len(lines), body)
			}
			if cd := cresp.Header.Get("Content-Disposition"); !strings.Contains(cd, "attachment") {
				t.Errorf("CSV Content-Disposition %q", cd)
			}

			// Webhook: save it, send the test event, see it arrive.
			run(t, ctx, "webhook page", chromedp.Navigate(s.base+"/dashboard/webhook"), chromedp.WaitVisible("#url", chromedp.ByID))
			check("webhook")
			run(t, ctx, "save the webhook",
				chromedp.SendKeys("#url", s.receiver.URL+"/hooks", chromedp.ByID),
				chromedp.Click(`//button[normalize-space()="Save"]`),
				chromedp.WaitVisible("#secret-value", chromedp.ByID),
			)
			run(t, ctx, "send the test event",
				chromedp.Click(`//button[normalize-space()="Send test event"]`),
				chromedp.WaitVisible("#test-h", chromedp.ByID),
			)
			waitTestDelivered(t, ctx)
			if got := s.received(); len(got) == 0 || !strings.Contains(got[len(got)-1], `"type":"webhook.test"`) {
				t.Fatalf("the receiver got %v", got)
			}
			check("webhook after test")
			shoot(t, ctx, "webhook-"+tag)

			// Batches list and the demo.
			run(t, ctx, "batches", chromedp.Navigate(s.base+"/dashboard/batches"), chromedp.WaitVisible("table", chromedp.ByQuery))
			check("batches")
			shoot(t, ctx, "batches-"+tag)
			run(t, ctx, "demo", chromedp.Navigate(s.base+"/demo?email=jane@good.com"), chromedp.WaitVisible("#result-h", chromedp.ByID))
			check("demo")
			shoot(t, ctx, "demo-"+tag)

			// Sign out: the console is closed again.
			run(t, ctx, "sign out",
				chromedp.Navigate(s.base+"/dashboard/"),
				chromedp.WaitVisible("#balance", chromedp.ByID),
				chromedp.Click(`//button[normalize-space()="Sign out"]`),
				chromedp.WaitVisible("#password", chromedp.ByID),
			)
			shoot(t, ctx, "login-"+tag)
			check("login")
			run(t, ctx, "after sign-out", chromedp.Navigate(s.base+"/dashboard/keys"), chromedp.WaitVisible("#password", chromedp.ByID), chromedp.Location(&loc))
			if !strings.Contains(loc, "/dashboard/login") {
				t.Fatalf("after sign-out the keys page led to %s", loc)
			}
			if !js {
				return
			}

			// By keyboard alone: Tab to the fields, type, Enter.
			tabTo := func(id string) {
				t.Helper()
				for range 20 {
					var active string
					run(t, ctx, "focus", chromedp.Evaluate(`document.activeElement ? document.activeElement.id : ""`, &active))
					if active == id {
						return
					}
					run(t, ctx, "tab", chromedp.KeyEvent("\t"))
				}
				t.Fatalf("Tab never reached #%s", id)
			}
			tabTo("email")
			run(t, ctx, "type email", chromedp.KeyEvent(email))
			tabTo("password")
			run(t, ctx, "type password and Enter", chromedp.KeyEvent("a long enough passphrase"), chromedp.KeyEvent("\r"),
				chromedp.WaitVisible("#state, #balance, #name", chromedp.ByQuery), chromedp.Location(&loc))
			if !strings.HasSuffix(loc, "/dashboard/keys") {
				t.Fatalf("signing in by keyboard led to %s, want back to the keys page", loc)
			}

			// 320 px wide: nothing wider than the screen.
			run(t, ctx, "narrow screen", emulation.SetDeviceMetricsOverride(320, 720, 1, true))
			for _, page := range []struct{ path, name string }{
				{"/dashboard/", "overview"}, {"/dashboard/keys", "keys"}, {"/dashboard/webhook", "webhook"},
				{"/dashboard/bulk", "bulk"}, {"/dashboard/batches", "batches"}, {"/dashboard/batches/1", "batch"},
				{"/demo?email=jane@good.com", "demo"},
				// A long suggestion wraps within the screen.
				{"/demo?email=sandra.moore.of.the.marketing.team@gmial.com", "demo-suggestion"},
			} {
				path := page.path
				var width int
				run(t, ctx, "narrow "+path, chromedp.Navigate(s.base+path), chromedp.WaitReady("main", chromedp.ByQuery),
					chromedp.Evaluate(`document.documentElement.scrollWidth`, &width))
				if width > 320 {
					var wide string
					chromedp.Run(ctx, chromedp.Evaluate(`[...document.querySelectorAll("main *")].filter(e => e.getBoundingClientRect().right > 321).slice(0, 5).map(e => e.tagName + "." + e.className + "#" + e.id + " " + Math.round(e.getBoundingClientRect().right)).join(", ")`, &wide))
					t.Errorf("%s is %d px wide on a 320 px screen: %s", path, width, wide)
				}
				shoot(t, ctx, "narrow-"+page.name)
			}
		})
	}
}

// waitTestDelivered waits until the webhook page reports its test event
// delivered and no longer reloads itself (by htmx or, without JavaScript,
// a meta refresh): a click while it still might could be undone by the
// reload.
func waitTestDelivered(t *testing.T, ctx context.Context) {
	t.Helper()
	settle(t, ctx, "the test event reported delivered",
		`document.getElementById("test")?.textContent.includes("Delivered") && `+settledPage, time.Minute)
}
