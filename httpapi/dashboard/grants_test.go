package dashboard_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/httpapi"
	"github.com/validmail/validmail/httpapi/dashboard"
	"github.com/validmail/validmail/httpapi/service"
	"github.com/validmail/validmail/store/memstore"
)

// An operator's grant through the operator API shows on the customer's
// overview, beside the signup grant, with the operator's checkout link.
func TestOverviewShowsGrants(t *testing.T) {
	const token = "op-token-for-the-overview-test-0123456789"
	svc, err := service.New(memstore.NewBackend(), &service.Config{
		Checks:    &emailcheck.Config{Nameservers: []string{"127.0.0.1:1"}},
		API:       httpapi.Config{AdminToken: token},
		Dashboard: &dashboard.Config{InsecureCookies: true, BillingURL: "https://billing.example.net/buy?plan=10k&x=<y>"},
		Workers:   -1,
	})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- svc.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	base := "http://" + ln.Addr().String()
	u := newUser(t, base)
	u.signup("buyer@example.com")

	page := u.do("GET", "/dashboard/", nil)
	if !strings.Contains(page.body, "300 from signup · 0 granted") {
		t.Fatalf("overview before the grant lacks its sources:\n%s", page.body)
	}
	req, _ := http.NewRequest("POST", base+"/api/v1/admin/accounts/buyer@example.com/grants", strings.NewReader(`{"credits":5000,"reason":"invoice 7"}`))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("grant: %d", resp.StatusCode)
	}
	page = u.do("GET", "/dashboard/", nil)
	for _, want := range []string{`id="balance">5300<`, "300 from signup · 5000 granted", `href="https://billing.example.net/buy?plan=10k&amp;x=%3cy%3e"`, "Get credits"} {
		if !strings.Contains(page.body, want) {
			t.Errorf("overview lacks %q", want)
		}
	}
}

func TestBillingURLChecked(t *testing.T) {
	for _, u := range []string{"javascript:alert(1)", "/relative", "ftp://x.example", "https://"} {
		_, err := service.New(memstore.NewBackend(), &service.Config{
			Checks:    &emailcheck.Config{Nameservers: []string{"127.0.0.1:1"}},
			Dashboard: &dashboard.Config{BillingURL: u},
			Workers:   -1,
		})
		if !errors.Is(err, httpapi.ErrConfig) {
			t.Errorf("BillingURL %q: %v", u, err)
		}
	}
}

// The batch page and its CSV show each result's reason and suggestion.
func TestBatchPageShowsReasons(t *testing.T) {
	s := startSite(t, nil)
	u := newUser(t, s.base)
	u.signup("reasons@example.com")
	a := u.do("POST", "/dashboard/bulk", url.Values{"emails": {"jane@good.com\n=cmd@gmial.com\nnope"}})
	if a.code != http.StatusSeeOther {
		t.Fatalf("bulk: %d %s", a.code, a.body)
	}
	batch := strings.TrimPrefix(a.hdr.Get("Location"), s.base)
	page := u.completedPage(t, batch)
	for _, want := range []string{"<td>valid</td>", "<td>no_such_domain</td><td>=cmd@gmail.com</td>", "<td>invalid_syntax</td>"} {
		if !strings.Contains(page, want) {
			t.Errorf("the batch page lacks %q", want)
		}
	}
	csvBody := u.do("GET", batch+"/results.csv", nil).body
	if !strings.HasPrefix(strings.SplitN(csvBody, "\n", 2)[0], "job_id,email,status,score,reason,did_you_mean,is_disposable,is_role_based,") || !strings.Contains(csvBody, ",no_such_domain,'=cmd@gmail.com") {
		t.Errorf("the console's CSV lacks reasons:\n%s", csvBody)
	}
}
