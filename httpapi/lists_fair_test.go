package httpapi_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/validmail/validmail/httpapi"
	"github.com/validmail/validmail/store"
)

// fairServer serves a handler whose uploads are paced at 512 B per 2 s,
// healthy from 64 KiB/s and judged after 100 ms, over TCP; a request's
// client address is its X-Test-Client header.
func fairServer(t *testing.T) (*fixture, *httptest.Server) {
	t.Helper()
	f := setup(t, &options{configure: func(c *httpapi.Config) {
		c.ListReadWindow, c.ListReadMinBytes = 2*time.Second, 512
		c.ListHealthyRate, c.ListEvictAfter = 64<<10, 100*time.Millisecond
		c.ClientIP = func(r *http.Request) string { return r.Header.Get("X-Test-Client") }
	}})
	srv := httptest.NewServer(f.checked)
	t.Cleanup(srv.Close)
	return f, srv
}

// uploadResult is how an upload ended: its status and body, or the
// client's error.
type uploadResult struct {
	code int
	body string
	err  error
}

// trickle starts an upload of key from client that sends a row about
// every 100 ms, above the pace and far below the healthy rate, until stop
// is closed or the server stops reading; the result arrives on done.
func trickle(srv *httptest.Server, key, client string, stop <-chan struct{}, done chan<- uploadResult) {
	pr, pw := io.Pipe()
	go func() {
		io.WriteString(pw, "email\n")
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-stop:
				pw.CloseWithError(io.ErrUnexpectedEOF) // an aborted upload
				return
			case <-tick.C:
			}
			if _, err := fmt.Fprintf(pw, "trickle%d-%s@good.com\n", i, strings.Repeat("x", 200)); err != nil {
				return
			}
		}
	}()
	req, _ := http.NewRequest("POST", srv.URL+"/api/v1/lists", pr)
	req.Header.Set("x-api-key", key)
	req.Header.Set("X-Test-Client", client)
	req.Header.Set("Content-Type", "text/csv")
	resp, err := srv.Client().Do(req)
	pr.CloseWithError(io.ErrClosedPipe)
	if err != nil {
		done <- uploadResult{err: err}
		return
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	done <- uploadResult{code: resp.StatusCode, body: string(b)}
}

// sendList posts a small list at once.
func sendList(t *testing.T, srv *httptest.Server, key, client string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", srv.URL+"/api/v1/lists", strings.NewReader("email\nfast@good.com\nquick@good.com\n"))
	req.Header.Set("x-api-key", key)
	req.Header.Set("X-Test-Client", client)
	req.Header.Set("Content-Type", "text/csv")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// waitHeld waits until h's uploads hold n slots.
func waitHeld(t *testing.T, f *fixture, n int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for httpapi.ListUploadsHeld(f.h) != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d upload slots held after a minute, want %d", httpapi.ListUploadsHeld(f.h), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestListUploadTricklersLoseSlots: eight accounts, each from a network
// of its own, hold every slot of the instance with two uploads trickling
// above the pace. Other accounts' lists are still taken: each takes the
// slot of the slowest trickle, which ends with 429 rate_limited and
// charges nothing.
func TestListUploadTricklersLoseSlots(t *testing.T) {
	t.Parallel()
	f, srv := fairServer(t)
	stop := make(chan struct{})
	done := make(chan uploadResult, 2*8)
	var accounts []store.Account
	for i := range 8 {
		a, key := f.newAccount(t, fmt.Sprintf("trickler%d@good.com", i), 0, store.AllPermissions())
		accounts = append(accounts, a)
		for range 2 {
			go trickle(srv, key, fmt.Sprintf("198.51.%d.7", i), stop, done)
		}
	}
	waitHeld(t, f, httpapi.DefaultMaxListUploads)
	// Every trickle has been judged by now: its slot is older than
	// ListEvictAfter.
	time.Sleep(200 * time.Millisecond)

	if code, body := sendList(t, srv, f.key, "203.0.113.9"); code != http.StatusAccepted {
		t.Fatalf("a customer beside the tricklers: %d %s", code, body)
	}
	// The slowest trickle lost its slot and ended, with nothing charged.
	select {
	case r := <-done:
		if r.err == nil && (r.code != http.StatusTooManyRequests || !strings.Contains(r.body, `"code":"rate_limited"`)) {
			t.Fatalf("the evicted upload: %d %s", r.code, r.body)
		}
	case <-time.After(time.Minute):
		t.Fatal("no evicted upload ended within a minute")
	}
	// Again, while every slot is taken: the newcomers keep theirs only
	// as long as they are fast.
	waitHeld(t, f, httpapi.DefaultMaxListUploads-1)
	_, key2 := f.newAccount(t, "second@good.com", 0, store.AllPermissions())
	go trickle(srv, key2, "192.0.2.200", stop, done) // refills the slot
	waitHeld(t, f, httpapi.DefaultMaxListUploads)
	time.Sleep(200 * time.Millisecond)
	_, key3 := f.newAccount(t, "third@good.com", 0, store.AllPermissions())
	if code, body := sendList(t, srv, key3, "192.0.2.201"); code != http.StatusAccepted {
		t.Fatalf("a second customer beside the tricklers: %d %s", code, body)
	}
	select {
	case r := <-done:
		if r.err == nil && (r.code != http.StatusTooManyRequests || !strings.Contains(r.body, `"code":"rate_limited"`)) {
			t.Fatalf("the second evicted upload: %d %s", r.code, r.body)
		}
	case <-time.After(time.Minute):
		t.Fatal("no second evicted upload ended within a minute")
	}
	evicted := 2
	close(stop)
	for range 2*8 + 1 - evicted {
		select {
		case <-done:
		case <-time.After(time.Minute):
			t.Fatal("a trickle did not end within a minute of its abort")
		}
	}
	for _, a := range accounts {
		if bal := f.balance(t, a.ID); bal != 300 {
			t.Errorf("account %s charged: balance %d", a.Email, bal)
		}
	}
	waitHeld(t, f, 0)
}

// TestListUploadsPerNetwork: eight accounts of one network hold only
// the network's share of the slots; another account of the network is
// refused, one of another network is not.
func TestListUploadsPerNetwork(t *testing.T) {
	t.Parallel()
	f, srv := fairServer(t)
	stop := make(chan struct{})
	done := make(chan uploadResult, 2*8)
	var started int
	for i := range 8 {
		_, key := f.newAccount(t, fmt.Sprintf("neighbour%d@good.com", i), 0, store.AllPermissions())
		for range 2 {
			started++
			go trickle(srv, key, fmt.Sprintf("198.51.100.%d", i+1), stop, done)
		}
	}
	// The refused ones answer at once; the network's share stays.
	for range started - httpapi.DefaultMaxListUploadsPerNetwork {
		select {
		case r := <-done:
			if r.err != nil || r.code != http.StatusTooManyRequests || !strings.Contains(r.body, "your network") {
				t.Fatalf("an upload beyond the network's share: %d %s %v", r.code, r.body, r.err)
			}
		case <-time.After(time.Minute):
			t.Fatal("the uploads beyond the network's share were not refused within a minute")
		}
	}
	waitHeld(t, f, httpapi.DefaultMaxListUploadsPerNetwork)
	_, key := f.newAccount(t, "late-neighbour@good.com", 0, store.AllPermissions())
	if code, body := sendList(t, srv, key, "198.51.100.77"); code != http.StatusTooManyRequests {
		t.Fatalf("one more of the network: %d %s", code, body)
	}
	if code, body := sendList(t, srv, f.key, "203.0.113.9"); code != http.StatusAccepted {
		t.Fatalf("another network's: %d %s", code, body)
	}
	close(stop)
	for range httpapi.DefaultMaxListUploadsPerNetwork {
		select {
		case <-done:
		case <-time.After(time.Minute):
			t.Fatal("a trickle did not end within a minute of its abort")
		}
	}
}

// The defaults make a slot costly to hold.
func TestListUploadDefaults(t *testing.T) {
	if httpapi.DefaultMaxListUploadsPerNetwork < 1 || httpapi.DefaultListHealthyRate < 512<<10 {
		t.Fatalf("per network %d, healthy rate %d", httpapi.DefaultMaxListUploadsPerNetwork, httpapi.DefaultListHealthyRate)
	}
}
