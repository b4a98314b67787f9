package dashboard_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/httpapi/dashboard"
	"github.com/validmail/validmail/jobs/lists"
	"github.com/validmail/validmail/store/backend"
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

// TestListToolAnyInstance uploads a list through one instance and
// previews, changes, confirms and cancels through another sharing the
// store, on every backend; the instance that read the upload may be gone
// by then.
func TestListToolAnyInstance(t *testing.T) {
	eachBackend(t, func(t *testing.T, open func() *backend.Backend, _ bool) {
		a, b := startSite(t, open()), startSite(t, open())
		onA := newUser(t, a.base)
		onA.signup("two-instances@example.com")
		onB := newUser(t, b.base)
		onB.c.Jar.SetCookies(mustURL(b.base), onA.c.Jar.Cookies(mustURL(a.base)))

		// A cancellation on B of a list uploaded on A.
		up := onA.upload("Dropped", "dropped.csv", "email\ndropped@good.com\n")
		if up.code != http.StatusSeeOther {
			t.Fatalf("upload on A: %d\n%s", up.code, up.body)
		}
		dropped := up.hdr.Get("Location")
		if c := onB.do("POST", dropped+"/cancel", url.Values{}); c.code != http.StatusSeeOther {
			t.Fatalf("cancel on B: %d\n%s", c.code, c.body)
		}
		if p := onA.do("GET", dropped, nil); p.code != http.StatusNotFound {
			t.Fatalf("a cancelled list on A: %d", p.code)
		}

		// Uploaded on A, which then stops; its column changed, previewed
		// and confirmed on B.
		up = onA.upload("Two columns", "two.csv", "email,work\nann@good.com,w1@good.com\nbob@good.com,w2@good.com\n")
		if up.code != http.StatusSeeOther {
			t.Fatalf("upload on A: %d\n%s", up.code, up.body)
		}
		loc := up.hdr.Get("Location")
		a.stop()
		p := onB.do("GET", loc, nil)
		if p.code != http.StatusOK || !strings.Contains(p.body, "ann@good.com") || field(t, p.body, "unique") != "2" {
			t.Fatalf("preview on B: %d\n%s", p.code, p.body)
		}
		ch := onB.do("POST", loc+"/column", url.Values{"column": {"2"}})
		next := ch.hdr.Get("Location")
		if ch.code != http.StatusSeeOther || next == loc {
			t.Fatalf("column change on B: %d %s\n%s", ch.code, next, ch.body)
		}
		p = onB.do("GET", next, nil)
		if p.code != http.StatusOK || !strings.Contains(p.body, `<td class="addr">w1@good.com</td>`) {
			t.Fatalf("preview on B after the change: %d\n%s", p.code, p.body)
		}
		c := onB.do("POST", next, confirmForm(t, p.body))
		if c.code != http.StatusSeeOther || !strings.Contains(c.hdr.Get("Location"), "/batches/") {
			t.Fatalf("confirm on B: %d %s\n%s", c.code, c.hdr.Get("Location"), c.body)
		}
		if again := onB.do("POST", next, confirmForm(t, p.body)); again.code != http.StatusNotFound {
			t.Fatalf("a second confirmation: %d", again.code)
		}
		batch := onB.do("GET", c.hdr.Get("Location"), nil)
		if batch.code != http.StatusOK || !strings.Contains(batch.body, "Two columns") {
			t.Fatalf("the batch on B: %d\n%s", batch.code, batch.body)
		}
	})
}

// trickleUpload sends the bulk page's form whose file arrives a row
// about every 100 ms until stop is closed; the answer arrives on done
// (code 0 when the client failed).
func trickleUpload(u *user, stop <-chan struct{}, done chan<- answer) {
	pr, pw := io.Pipe()
	go func() {
		io.WriteString(pw, "--XYZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"slow.csv\"\r\nContent-Type: text/csv\r\n\r\nemail\n")
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-stop:
				pw.CloseWithError(io.ErrUnexpectedEOF)
				return
			case <-tick.C:
			}
			if _, err := fmt.Fprintf(pw, "slow%d-%s@good.com\n", i, strings.Repeat("x", 200)); err != nil {
				return
			}
		}
	}()
	req, _ := http.NewRequest("POST", u.base+"/dashboard/bulk/list", pr)
	req.Header.Set("Content-Type", "multipart/form-data; boundary=XYZ")
	resp, err := u.c.Do(req)
	pr.CloseWithError(io.ErrClosedPipe)
	if err != nil {
		done <- answer{}
		return
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	done <- answer{resp.StatusCode, resp.Header, string(b)}
}

// TestListToolTricklersLoseSlots: accounts trickling uploads to the bulk
// page hold every slot of the instance; another account's upload takes
// the slowest one's, which is answered 429, and is previewed.
func TestListToolTricklersLoseSlots(t *testing.T) {
	t.Parallel()
	b := memstore.NewBackend()
	d, err := dashboard.New(dashboard.Storage{Accounts: b.Accounts, Passwords: b.Passwords, Sessions: b.Sessions, Tokens: b.Tokens},
		credits.New(b.Credits, nil), mustQueue(t, b), &dashboard.Config{
			InsecureCookies: true, SignupsPerHour: 1000, Lists: &lists.Options{TempDir: t.TempDir()},
			ClientIP:       func(r *http.Request) string { return r.Header.Get("X-Test-Client") },
			MaxListUploads: 4, ListReadWindow: 2 * time.Second, ListReadMinBytes: 512,
			ListHealthyRate: 64 << 10, ListEvictAfter: 100 * time.Millisecond,
		})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(d.Handler())
	defer srv.Close()
	stop := make(chan struct{})
	done := make(chan answer, 4)
	for i := range 2 {
		u := userFrom(t, srv.URL, fmt.Sprintf("198.51.%d.7", i))
		u.signup(fmt.Sprintf("trickler%d@example.com", i))
		for range 2 {
			go trickleUpload(u, stop, done)
		}
	}
	deadline := time.Now().Add(time.Minute)
	for dashboard.ListUploadsHeld(d) != 4 {
		if time.Now().After(deadline) {
			t.Fatalf("%d slots held after a minute", dashboard.ListUploadsHeld(d))
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // past ListEvictAfter
	victim := userFrom(t, srv.URL, "203.0.113.9")
	victim.signup("victim@example.com")
	if _, p := victim.preview("", "mine.csv", "email\nmine@good.com\n"); p.code != http.StatusOK {
		t.Fatalf("the customer's preview beside the tricklers: %d\n%s", p.code, p.body)
	}
	select {
	case a := <-done:
		if a.code != 0 && (a.code != http.StatusTooManyRequests || !strings.Contains(a.body, "too slow")) {
			t.Fatalf("the evicted upload: %d\n%s", a.code, a.body)
		}
	case <-time.After(time.Minute):
		t.Fatal("no evicted upload ended within a minute")
	}
	close(stop)
	for range 3 {
		select {
		case <-done:
		case <-time.After(time.Minute):
			t.Fatal("a trickle did not end within a minute of its abort")
		}
	}
}
