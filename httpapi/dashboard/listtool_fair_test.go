package dashboard_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/httpapi/dashboard"
	"github.com/validmail/validmail/jobs/lists"
	"github.com/validmail/validmail/store/memstore"
)

// fromClient makes a client's requests carry its address in
// X-Test-Client, which the site under test reads as the client's.
type fromClient struct {
	addr string
	rt   http.RoundTripper
}

func (c fromClient) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-Test-Client", c.addr)
	return c.rt.RoundTrip(r)
}

// userFrom is a user whose requests come from addr.
func userFrom(t *testing.T, base, addr string) *user {
	u := newUser(t, base)
	u.c.Transport = fromClient{addr: addr, rt: http.DefaultTransport}
	return u
}

// TestListToolUnconfirmedListsRefuseNoOne: 33 accounts upload a one-row
// list each and never confirm it, from as many networks, then from one;
// another account's upload is never refused for want of waiting places,
// and the waiting lists stay within the instance's and the network's
// bounds.
func TestListToolUnconfirmedListsRefuseNoOne(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		network func(i int) string
	}{
		{"33 networks", func(i int) string { return fmt.Sprintf("198.51.%d.7", i) }},
		{"one network", func(i int) string { return fmt.Sprintf("198.51.100.%d", i+1) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			tmp := t.TempDir()
			b := memstore.NewBackend()
			d, err := dashboard.New(dashboard.Storage{Accounts: b.Accounts, Passwords: b.Passwords, Sessions: b.Sessions, Tokens: b.Tokens},
				credits.New(b.Credits, nil), mustQueue(t, b), &dashboard.Config{
					InsecureCookies: true, SignupsPerHour: 1000, Lists: &lists.Options{TempDir: tmp},
					ClientIP: func(r *http.Request) string { return r.Header.Get("X-Test-Client") },
				})
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(d.Handler())
			defer srv.Close()
			var locs []string
			var users []*user
			for i := range 33 {
				// Signed in from a network of its own (sign-ins are
				// limited per network), uploading from c's.
				u := userFrom(t, srv.URL, fmt.Sprintf("192.0.%d.1", i))
				u.signup(fmt.Sprintf("waiter%d@example.com", i))
				u.c.Transport = fromClient{addr: c.network(i), rt: http.DefaultTransport}
				a := u.upload("", "one.csv", "email\nwaiter@good.com\n")
				if a.code != http.StatusSeeOther {
					t.Fatalf("upload %d: %d\n%s", i, a.code, a.body)
				}
				locs = append(locs, a.hdr.Get("Location"))
				users = append(users, u)
			}
			// Every account's list waits, but one network's only its
			// newest few.
			for i, u := range users {
				want := http.StatusOK
				if c.name == "one network" && i < 33-dashboard.DefaultMaxWaitingListsPerNetwork {
					want = http.StatusNotFound
				}
				if a := u.do("GET", locs[i], nil); a.code != want {
					t.Fatalf("list %d: %d, want %d", i, a.code, want)
				}
			}
			victim := userFrom(t, srv.URL, "203.0.113.9")
			victim.signup("victim@example.com")
			loc, p := victim.preview("", "mine.csv", "email\nmine@good.com\n")
			if p.code != http.StatusOK || !strings.Contains(p.body, "mine@good.com") {
				t.Fatalf("the victim's preview: %d\n%s", p.code, p.body)
			}
			if a := victim.do("POST", loc, confirmForm(t, p.body)); a.code != http.StatusSeeOther || !strings.Contains(a.hdr.Get("Location"), "/batches/") {
				t.Fatalf("the victim's confirmation: %d %s\n%s", a.code, a.hdr.Get("Location"), a.body)
			}
			if ents, err := os.ReadDir(tmp); err != nil || len(ents) != 0 {
				t.Errorf("the temporary directory holds %v (%v)", ents, err)
			}
		})
	}
}

// Lists wait minutes, not half an hour.
func TestListToolWaitIsShort(t *testing.T) {
	if dashboard.DefaultListWaitTTL > 10*60*1e9 || dashboard.DefaultMaxWaitingListsPerNetwork < 1 {
		t.Fatalf("wait %v, %d a network", dashboard.DefaultListWaitTTL, dashboard.DefaultMaxWaitingListsPerNetwork)
	}
}
